// The directory of live actors on the master, for the admin REPL and for
// routing a worker's hello to its trial. Entries leave when their actor dies.

#include <map>
#include <memory>
#include <sstream>

#include "actors/spawn.hpp"
#include "caf/all.hpp"

namespace det {
namespace {

using key = std::pair<std::string, std::string>;  // kind, id

struct directory_state {
  static inline const char* name = "directory";
  std::map<key, caf::actor> entries;
  std::map<caf::actor_addr, key> by_address;
};

using self_ptr = directory_actor::stateful_pointer<directory_state>;

constexpr auto inspect_timeout = std::chrono::seconds(2);

directory_actor::behavior_type directory_impl(self_ptr self) {
  self->set_down_handler([=](const caf::down_msg& dm) {
    auto it = self->state.by_address.find(dm.source);
    if (it == self->state.by_address.end())
      return;
    self->state.entries.erase(it->second);
    self->state.by_address.erase(it);
  });
  return {
      [=](register_atom, const std::string& kind, const std::string& id, caf::actor a) {
        self->monitor(a);
        self->state.by_address[a.address()] = {kind, id};
        self->state.entries[{kind, id}] = std::move(a);
      },
      [=](get_atom, const std::string& kind, const std::string& id) -> caf::actor {
        auto it = self->state.entries.find({kind, id});
        return it == self->state.entries.end() ? caf::actor{} : it->second;
      },
      // Every actor reports its own mailbox length: the mailbox may only be read
      // by the thread running the actor, so ask each one and gather the answers.
      [=](actors_atom) -> caf::result<std::string> {
        auto rp = self->make_response_promise<std::string>();
        auto rows = std::make_shared<std::map<key, std::string>>();
        auto pending = std::make_shared<std::size_t>(self->state.entries.size());
        auto finish = [rp, rows]() mutable {
          std::ostringstream os;
          os << "KIND         ID                 MAILBOX\n";
          for (auto& [k, mailbox] : *rows) {
            os << k.first << std::string(k.first.size() < 13 ? 13 - k.first.size() : 1, ' ')
               << k.second << std::string(k.second.size() < 19 ? 19 - k.second.size() : 1, ' ')
               << mailbox << "\n";
          }
          os << rows->size() << " live actors\n";
          rp.deliver(os.str());
        };
        if (*pending == 0) {
          finish();
          return rp;
        }
        for (auto& [k, handle] : self->state.entries) {
          auto entry = k;
          auto done = [=](std::string mailbox) mutable {
            (*rows)[entry] = std::move(mailbox);
            if (--*pending == 0)
              finish();
          };
          self->request(handle, inspect_timeout, inspect_atom::value)
              .then(
                  [=](const std::string& text) mutable {
                    auto pos = text.find('\n');
                    auto line = text.substr(0, pos);
                    auto colon = line.find(": ");
                    done(colon == std::string::npos ? "?" : line.substr(colon + 2));
                  },
                  [=](caf::error&) mutable { done("(no answer)"); });
        }
        return rp;
      },
      [=](inspect_atom, const std::string& kind, const std::string& id) -> caf::result<std::string> {
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
