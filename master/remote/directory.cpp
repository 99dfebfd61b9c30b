// The directory of live actors on the master, for the admin REPL and for
// routing a worker's hello to its trial. Entries leave when their actor dies.

#include <charconv>
#include <map>
#include <memory>
#include <sstream>

#include "master/spawn.hpp"
#include "caf/all.hpp"

namespace det {
namespace {

using key = std::pair<std::string, std::string>;  // kind, id

struct directory_state {
  static inline const char* name = "directory";
  std::map<key, caf::actor> entries;
  std::map<caf::actor_addr, key> by_address;
  std::map<int64_t, experiment_actor> experiments;
  std::map<int64_t, trial_actor> trials;

};

using self_ptr = directory_actor::stateful_pointer<directory_state>;

constexpr auto inspect_timeout = std::chrono::seconds(2);
// CAF 0.17 slows down sharply with many pending requests per actor.
constexpr std::size_t max_in_flight = 32;

/// One `actors` listing in progress.
struct actor_survey {
  caf::typed_response_promise<std::string> rp;
  std::vector<std::pair<key, caf::actor>> to_ask;  // every live actor, asked in order
  std::size_t next = 0;
  std::size_t answered = 0;
  std::map<key, std::string> mailbox;

  void finish() {
    std::ostringstream os;
    os << "KIND         ID                 MAILBOX\n";
    for (auto& [k, size] : mailbox)
      os << pad(k.first, 13) << pad(k.second, 19) << size << "\n";
    os << mailbox.size() << " live actors\n";
    rp.deliver(os.str());
  }

  static std::string pad(const std::string& s, std::size_t width) {
    return s + std::string(s.size() < width ? width - s.size() : 1, ' ');
  }
};

// The first line of every inspect answer is "mailbox: N".
std::string mailbox_line(const std::string& text) {
  auto line = text.substr(0, text.find('\n'));
  auto colon = line.find(": ");
  return colon == std::string::npos ? "?" : line.substr(colon + 2);
}

void ask_next(self_ptr self, std::shared_ptr<actor_survey> survey) {
  auto [k, handle] = survey->to_ask[survey->next++];
  auto done = [self, survey, k = k](std::string size) {
    survey->mailbox[k] = std::move(size);
    if (++survey->answered == survey->to_ask.size())
      survey->finish();
    else if (survey->next < survey->to_ask.size())
      ask_next(self, survey);
  };
  self->request(handle, inspect_timeout, inspect_atom::value)
      .then([=](const std::string& text) { done(mailbox_line(text)); },
            [=](caf::error&) { done("(no answer)"); });
}

void add(self_ptr self, const std::string& kind, const std::string& id, caf::actor a) {
  self->monitor(a);
  self->state.by_address[a.address()] = {kind, id};
  self->state.entries[{kind, id}] = std::move(a);
}

/// Forgets the typed entry of `id` if it is still the actor that went down.
template <class Handle>
void forget(std::map<int64_t, Handle>& typed, const std::string& id, const caf::actor_addr& gone) {
  int64_t number = 0;
  if (std::from_chars(id.data(), id.data() + id.size(), number).ec != std::errc{})
    return;  // registered by name only, never by id
  auto it = typed.find(number);
  if (it != typed.end() && it->second.address() == gone)
    typed.erase(it);
}

// `inspect searcher N`: experiment N's searcher actor, asked through the experiment that owns it.
caf::result<std::string> inspect_searcher(self_ptr self, const std::string& id) {
  int64_t number = 0;
  auto found = self->state.experiments.end();
  if (std::from_chars(id.data(), id.data() + id.size(), number).ec == std::errc{})
    found = self->state.experiments.find(number);
  if (found == self->state.experiments.end())
    return "no live experiment " + id + ", so no searcher\n";
  auto rp = self->make_response_promise<std::string>();
  self->request(found->second, inspect_timeout, searcher_atom::value, inspect_atom::value)
      .then([=](const std::string& text) mutable { rp.deliver("searcher " + id + "\n" + text); },
            [=](caf::error& err) mutable {
              rp.deliver("searcher " + id + " did not answer: " + self->system().render(err) + "\n");
            });
  return rp;
}

directory_actor::behavior_type directory_impl(self_ptr self) {
  // The directory exits last but one (before persistence) when the master stops: it takes every
  // experiment, trial, allocation and agent with it, or the actor system would wait for them
  // forever.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    // Trials and experiments first: an agent proxy that goes first tells its allocations their
    // containers are lost, and a trial that still lived would count that as a failure.
    for (const char* kind : {"experiment", "trial", "allocation", "agent", "pool"})
      for (auto& [k, handle] : self->state.entries)
        if (k.first == kind)
          self->send_exit(handle, caf::exit_reason::user_shutdown);
    self->quit(msg.reason);
  });
  self->set_down_handler([=](const caf::down_msg& dm) {
    auto it = self->state.by_address.find(dm.source);
    if (it == self->state.by_address.end())
      return;
    // A re-registered agent's new proxy may already hold the name.
    auto entry = self->state.entries.find(it->second);
    if (entry != self->state.entries.end() && entry->second.address() == dm.source)
      self->state.entries.erase(entry);
    const auto& [kind, id] = it->second;
    if (kind == "experiment")
      forget(self->state.experiments, id, dm.source);
    else if (kind == "trial")
      forget(self->state.trials, id, dm.source);
    self->state.by_address.erase(it);
  });
  return {
      [=](register_atom, const std::string& kind, const std::string& id, caf::actor a) {
        add(self, kind, id, std::move(a));
      },
      [=](register_atom, experiment_id id, experiment_actor a) {
        add(self, "experiment", std::to_string(id.value), caf::actor_cast<caf::actor>(a));
        self->state.experiments[id.value] = std::move(a);
      },
      [=](register_atom, trial_id id, trial_actor a) {
        add(self, "trial", std::to_string(id.value), caf::actor_cast<caf::actor>(a));
        self->state.trials[id.value] = std::move(a);
      },
      [=](get_atom, experiment_id id) -> experiment_actor {
        auto it = self->state.experiments.find(id.value);
        return it == self->state.experiments.end() ? experiment_actor{} : it->second;
      },
      [=](get_atom, trial_id id) -> trial_actor {
        auto it = self->state.trials.find(id.value);
        return it == self->state.trials.end() ? trial_actor{} : it->second;
      },
      // Every actor reports its own mailbox length: the mailbox may only be read
      // by the thread running the actor, so ask each one, at most
      // `max_in_flight` at a time, and gather the answers.
      [=](actors_atom) -> caf::result<std::string> {
        auto survey = std::make_shared<actor_survey>();
        survey->rp = self->make_response_promise<std::string>();
        for (auto& [k, handle] : self->state.entries)
          survey->to_ask.emplace_back(k, handle);
        if (survey->to_ask.empty()) {
          survey->finish();
          return survey->rp;
        }
        for (std::size_t i = 0; i < max_in_flight && survey->next < survey->to_ask.size(); ++i)
          ask_next(self, survey);
        return survey->rp;
      },
      [=](inspect_atom, const std::string& kind, const std::string& id) -> caf::result<std::string> {
        if (kind == "searcher")  // an experiment's searcher actor, reached through its experiment
          return inspect_searcher(self, id);
        auto it = self->state.entries.find({kind, id});
        if (it == self->state.entries.end())
          return "no live " + kind + " named " + id + "\n";
        auto rp = self->make_response_promise<std::string>();
        self->request(it->second, inspect_timeout, inspect_atom::value)
            .then([=](const std::string& text) mutable { rp.deliver(kind + " " + id + "\n" + text); },
                  [=](caf::error& err) mutable {
                    rp.deliver(kind + " " + id + " did not answer: " + self->system().render(err) +
                               "\n");
                  });
        return rp;
      },
  };
}

} // namespace

directory_actor spawn_directory(caf::actor_system& sys) {
  return sys.spawn(directory_impl);
}

} // namespace det
