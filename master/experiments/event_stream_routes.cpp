#include "master/experiments/event_stream_routes.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <mutex>
#include <variant>

#include "master/http/route_coroutine.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"

namespace det::runtime {

namespace {

// A silent stream says it is alive this often, so that proxies keep it and a client that left
// is noticed at the next write.
constexpr auto heartbeat_interval = std::chrono::seconds(15);
// Changes one piece reads at most: a burst goes out in several chunks rather than one huge one.
constexpr size_t changes_per_piece = 5000;

enum class stream_scope { all, experiment, trial };

/// What keeps a stream going for its caller: the token it came with, checked on every poll, and
/// the slot of its user's quota it holds.
struct stream_caller {
  authenticator& auth;
  std::string token_sha256;
  std::unique_ptr<stream_quota::slot> slot;
};

/// An experiment's trials as the reader finds them, asked for without waiting: filled from one of
/// CAF's threads, taken by the stream's next poll.
struct trials_reload {
  std::mutex mutex;
  bool answered = false;
  std::set<int64_t> trials;
};

/// A stream's lookup of the token that opened it, when the authenticator no longer has it cached:
/// answered on one of CAF's threads while the stream goes on.
struct token_lookup {
  std::atomic<bool> in_flight{false};
  std::atomic<bool> refused{false};
};

/// The experiment stream's trials: those stored when the stream was opened, read at feed seq
/// `as_of` or later (a trial's row is stored, and announced, before its first report).
struct known_trials {
  std::set<int64_t> ids;
  uint64_t as_of = 0;
};

class event_stream final : public response_stream {
 public:
  event_stream(caf::actor_system& sys, persistence_reader_actor reader, std::shared_ptr<change_feed> feed,
               stream_caller caller, stream_scope scope, int64_t id, std::optional<uint64_t> after,
               std::string generation, known_trials trials)
      : sys_(sys), reader_(std::move(reader)), feed_(std::move(feed)), caller_(std::move(caller)), scope_(scope),
        id_(id), after_(after), client_generation_(std::move(generation)), trials_(std::move(trials.ids)),
        trials_as_of_(trials.as_of) {}

  std::optional<std::string> next() override {
    // A revoked or expired token ends what it opened.
    if (!still_signed_in()) return std::nullopt;
    if (!started_) return first_line();
    // After a reset the stream waits for its experiment's trials before it reads on: a report of
    // one it does not know would be left out.
    if (reload_) {
      std::lock_guard lock{reload_->mutex};
      if (!reload_->answered) return "";
      trials_.merge(reload_->trials);
    }
    reload_.reset();
    auto read = feed_->read_after(cursor_, changes_per_piece);
    if (read.fell_behind) return line(reset());
    pb::StreamEvent metrics, changed;
    std::set<int64_t> experiments, trials, logs;
    // A batch's reports are consecutive changes: each batch is read once.
    const std::string* parsed_from = nullptr;
    pb::MetricBatch parsed;
    for (auto& c : read.changes) {
      cursor_ = c.seq;
      switch (c.kind) {
        case change_kind::metrics:
          if (!covers_trial(c.id)) break;
          if (c.batch.get() != parsed_from) {
            // A report whose names are not UTF-8 (an in-process trial's) was stored, but its batch
            // does not parse: the stream leaves that batch out rather than fail.
            if (!parsed.ParseFromString(*c.batch)) parsed.Clear();
            parsed_from = c.batch.get();
          }
          if (c.index < parsed.reports_size()) *metrics.add_metrics() = std::move(*parsed.mutable_reports(c.index));
          break;
        case change_kind::logs:
          if (scope_ == stream_scope::trial && c.id == id_) logs.insert(c.id);
          break;
        case change_kind::trial:  // a new trial's row is announced so, before its first report
          if (scope_ == stream_scope::experiment && c.experiment_id == id_) trials_.insert(c.id);
          if (covers_trial(c.id)) trials.insert(c.id);
          if (scope_ == stream_scope::all && c.experiment_id != 0) experiments.insert(c.experiment_id);
          break;
        case change_kind::experiment:
          if (scope_ == stream_scope::all || (scope_ == stream_scope::experiment && c.id == id_))
            experiments.insert(c.id);
          break;
      }
    }
    std::string out;
    if (metrics.metrics_size() > 0) {
      metrics.set_type("metrics");
      metrics.set_cursor(cursor_);
      out += line(metrics);
    }
    if (!experiments.empty() || !trials.empty() || !logs.empty()) {
      changed.set_type("changed");
      changed.set_cursor(cursor_);
      for (auto e : experiments) changed.add_experiments(e);
      for (auto t : trials) changed.add_trials(t);
      for (auto t : logs) changed.add_trials_with_logs(t);
      out += line(changed);
    }
    if (out.empty() && std::chrono::steady_clock::now() - last_sent_ >= heartbeat_interval) {
      pb::StreamEvent beat;
      beat.set_type("heartbeat");
      beat.set_cursor(cursor_);
      out = line(beat);
    }
    if (!out.empty()) last_sent_ = std::chrono::steady_clock::now();
    return out;
  }

 private:
  // Whether the token that opened the stream still speaks for its user: from the authenticator's
  // cache, else looked up without waiting (the stream ends at the poll after a refusal).
  bool still_signed_in() {
    auto known = caller_.auth.cached(caller_.token_sha256);
    if (auto* who = std::get_if<caf::expected<principal>>(&known)) return static_cast<bool>(*who);
    if (!lookup_->in_flight.exchange(true))
      caller_.auth.authenticate_then(caller_.token_sha256, [lookup = lookup_](caf::expected<principal> who) {
        if (!who) lookup->refused = true;
        lookup->in_flight = false;
      });
    return !lookup_->refused;
  }

  std::string first_line() {
    started_ = true;
    if (after_ && client_generation_ == feed_->generation() && *after_ <= feed_->latest() &&
        !feed_->read_after(*after_, 1).fell_behind) {
      cursor_ = *after_;  // resumed: what came meanwhile follows
      add_trials_announced_from(trials_as_of_);
      return "";
    }
    if (after_) return line(reset());
    pb::StreamEvent hello;
    hello.set_type("hello");
    hello.set_cursor(cursor_ = feed_->latest());
    hello.set_generation(feed_->generation());
    add_trials_announced_from(trials_as_of_);
    return line(hello);
  }

  // Trials announced after feed seq `from` up to the cursor, which the stream will not read: the
  // trials read when it opened, as of an earlier seq, may lack them.
  void add_trials_announced_from(uint64_t from) {
    if (scope_ != stream_scope::experiment || from >= cursor_) return;
    auto read = feed_->read_after(from, static_cast<size_t>(cursor_ - from));
    if (read.fell_behind) return reload_trials();
    for (const auto& c : read.changes)
      if (c.seq <= cursor_ && c.kind == change_kind::trial && c.experiment_id == id_) trials_.insert(c.id);
  }

  // Asks the reader for the experiment's trials again, without waiting for them.
  void reload_trials() {
    auto reload = std::make_shared<trials_reload>();
    ask_then(
        sys_, reader_, caf::duration{route_timeout},
        [reload](pb::GetExperimentResponse& e) {
          std::lock_guard lock{reload->mutex};
          for (const auto& t : e.trials()) reload->trials.insert(t.id());
          reload->answered = true;
        },
        [reload](caf::error&) {  // the stream goes on with the trials it knows
          std::lock_guard lock{reload->mutex};
          reload->answered = true;
        },
        get_atom::value, experiment_id{id_});
    reload_ = std::move(reload);
  }

  pb::StreamEvent reset() {
    pb::StreamEvent r;
    r.set_type("reset");
    r.set_cursor(cursor_ = feed_->latest());
    r.set_generation(feed_->generation());
    if (scope_ == stream_scope::experiment) reload_trials();  // trials announced in what was dropped
    return r;
  }

  std::string line(const pb::StreamEvent& e) {
    last_sent_ = std::chrono::steady_clock::now();
    return to_json(e) + "\n";
  }

  bool covers_trial(int64_t trial) const {
    return (scope_ == stream_scope::trial && trial == id_) || (scope_ == stream_scope::experiment && trials_.count(trial));
  }

  caf::actor_system& sys_;
  persistence_reader_actor reader_;
  std::shared_ptr<change_feed> feed_;
  stream_caller caller_;
  stream_scope scope_;
  int64_t id_;
  std::optional<uint64_t> after_;
  std::string client_generation_;
  bool started_ = false;
  uint64_t cursor_ = 0;
  std::set<int64_t> trials_;
  uint64_t trials_as_of_ = 0;
  std::shared_ptr<trials_reload> reload_;  // while a reset's reload is under way
  std::shared_ptr<token_lookup> lookup_ = std::make_shared<token_lookup>();
  std::chrono::steady_clock::time_point last_sent_ = std::chrono::steady_clock::now();
};

// Answers with the stream once its experiment or trial is known to exist (an unknown one is a 404
// now rather than a stream that never says anything), with an experiment's trials as they are.
route_coroutine open_stream(event_stream_routes& routes, principal who, stream_scope scope, int64_t id,
                            std::optional<uint64_t> after, std::string generation, reply_to out) {
  known_trials trials{{}, routes.handles.feed->latest()};  // before the read: later trials are announced after
  if (scope == stream_scope::experiment) {
    auto found = co_await ask<pb::GetExperimentResponse>(out, routes.handles.reader, get_atom::value, experiment_id{id});
    if (!found) co_return out.error(found.error);
    if (found->experiment().id() == 0) co_return out.error(errc::not_found, "experiment " + std::to_string(id) + " not found");
    for (const auto& t : found->trials()) trials.ids.insert(t.id());
  } else if (scope == stream_scope::trial) {
    auto found = co_await ask<pb::GetTrialResponse>(out, routes.handles.reader, get_atom::value, trial_id{id});
    if (!found) co_return out.error(found.error);
    if (found->trial().id() == 0) co_return out.error(errc::not_found, "trial " + std::to_string(id) + " not found");
  }
  auto slot = routes.quota->take(who.user_id);
  if (!slot)
    co_return out.error(errc::too_many_requests, "user " + who.username + " has " +
                                                     std::to_string(stream_quota::max_streams_per_user) +
                                                     " event streams (GET /api/v1/stream) open, as many as one may: close one first");
  http_response res;
  res.content_type = "application/x-ndjson";
  res.stream = std::make_shared<event_stream>(routes.sys, routes.handles.reader, routes.handles.feed,
                                              stream_caller{routes.auth, who.token_sha256, std::move(slot)}, scope, id,
                                              after, std::move(generation), std::move(trials));
  out.finish(std::move(res));
}

}  // namespace

std::unique_ptr<stream_quota::slot> stream_quota::take(int64_t user_id) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto& open = open_[user_id];
  if (open >= max_streams_per_user) return nullptr;
  ++open;
  return std::make_unique<slot>(shared_from_this(), user_id);
}

void stream_quota::give_back(int64_t user_id) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (--open_[user_id] == 0) open_.erase(user_id);
}

void event_stream_routes::add_to(http_router& server) {
  server.Get("/api/v1/stream", guards.signed_in([this](const http_request& req, http_response& res, const principal& who) {
    auto scope = stream_scope::all;
    int64_t id = 0;
    for (auto [key, kind] : {std::pair{"experiment_id", stream_scope::experiment}, std::pair{"trial_id", stream_scope::trial}}) {
      if (!req.has_param(key)) continue;
      auto parsed = parse_id(req.get_param_value(key));
      if (!parsed || scope != stream_scope::all)
        return reply_error(res, errc::invalid_input, "give at most one of experiment_id and trial_id, as a number");
      scope = kind;
      id = *parsed;
    }
    std::optional<uint64_t> after;
    if (req.has_param("after")) {
      auto parsed = parse_id(req.get_param_value("after"));
      if (!parsed) return reply_error(res, errc::invalid_input, "after must be a cursor the stream sent, not \"" + req.get_param_value("after") + "\"");
      after = static_cast<uint64_t>(*parsed);
    }
    open_stream(*this, who, scope, id, after, req.get_param_value("generation"), reply_to{sys, res});
  }));
}

} // namespace det::runtime
