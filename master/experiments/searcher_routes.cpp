#include "master/experiments/searcher_routes.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "caf/all.hpp"
#include "master/local_interfaces.hpp"
#include "master/experiments/experiment_rules.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"

namespace det::runtime {
namespace {

// How long a read of a custom searcher's events waits for one before it is answered with none.
constexpr auto events_wait = std::chrono::seconds(20);

/// Asks for the events without waiting; the callback gets the answer on one of CAF's threads.
using searcher_events_ask = std::function<void(std::function<void(searcher_events_answer)>)>;

/// A custom searcher's read of its events while there are none: asked again whenever the last ask
/// came back without any, and the connection holds no thread in between, until it has events (or
/// the experiment's end) or the wait is over (then none: the client reads again). One chunk.
class searcher_events_poll final : public response_stream {
 public:
  explicit searcher_events_poll(searcher_events_ask ask)
      : ask_(std::move(ask)), deadline_(std::chrono::steady_clock::now() + events_wait) {}

  std::optional<std::string> next() override {
    if (answered_) return std::nullopt;
    auto body = events_asked();
    if (!body && std::chrono::steady_clock::now() < deadline_) return std::string{};
    answered_ = true;
    return body ? std::move(*body) : to_json(pb::GetSearcherEventsResponse{});
  }

 private:
  struct ask_in_flight {
    std::mutex mutex;
    bool answered = false;
    std::optional<std::string> body;  // events, as JSON; none when the answer had none
  };

  // The events of the last ask, once it came back with some; else nullopt, asking again when it
  // came back without (a restarted master that has not restored the experiment is asked again too).
  std::optional<std::string> events_asked() {
    if (in_flight_) {
      std::lock_guard lock{in_flight_->mutex};
      if (!in_flight_->answered) return std::nullopt;
      if (in_flight_->body) return std::move(in_flight_->body);
    }
    auto asked = std::make_shared<ask_in_flight>();
    in_flight_ = asked;
    ask_([asked](searcher_events_answer answer) {
      std::lock_guard lock{asked->mutex};
      const auto* events = std::get_if<pb::GetSearcherEventsResponse>(&answer);
      if (events && events->searcher_events_size() > 0) asked->body = to_json(*events);
      asked->answered = true;
    });
    return std::nullopt;
  }

  searcher_events_ask ask_;
  std::chrono::steady_clock::time_point deadline_;
  std::shared_ptr<ask_in_flight> in_flight_;
  bool answered_ = false;
};

} // namespace

void searcher_routes::events(int64_t id, http_response& res) {
  auto later = res.defer();
  events_then(id, [this, id, later](searcher_events_answer first) {
    if (auto* refused = std::get_if<http_response>(&first)) return later->finish(std::move(*refused));
    auto events = std::get<pb::GetSearcherEventsResponse>(std::move(first));
    if (events.searcher_events_size() > 0)
      return later->finish_with([events = std::move(events)](http_response& made) { reply_json(made, events); });
    http_response waiting;
    waiting.content_type = "application/json";
    waiting.stream = std::make_shared<searcher_events_poll>(
        [this, id](std::function<void(searcher_events_answer)> done) { events_then(id, std::move(done)); });
    later->finish(std::move(waiting));
  });
}

void searcher_routes::events_then(int64_t id, std::function<void(searcher_events_answer)> done) {
  auto refused = [this, done](const caf::error& e) {
    http_response failed;
    reply_error(failed, sys, e);
    done(std::move(failed));
  };
  ask_then(
      sys, front, caf::duration{route_timeout},
      [done](pb::GetSearcherEventsResponse& events) { done(std::move(events)); },
      [this, id, done, refused](caf::error& e) {
        if (e != errc::not_found) return refused(e);
        // Not live: ended, or not restored yet by a restarted master.
        ask_then(
            sys, handles.reader, caf::duration{route_timeout},
            [id, done, refused](pb::GetExperimentResponse& found) {
              auto ended = ended_experiment(id, found);
              if (!ended) return refused(ended.error());
              pb::GetSearcherEventsResponse events;
              events.add_searcher_events()->mutable_experiment_inactive()->set_experiment_state(ended->state());
              done(std::move(events));
            },
            [refused](caf::error& e) { refused(e); }, get_atom::value, experiment_id{id});
      },
      searcher_atom::value, experiment_id{id});
}

route_coroutine searcher_routes::apply_operations(int64_t id, pb::PostSearcherOperationsRequest body, reply_to out) {
  auto applied = co_await ask<bool>(out, front, experiment_id{id}, std::move(body));
  if (applied) co_return out.empty_json();
  if (applied.error != errc::not_found) co_return out.error(applied.error);
  // Not live: ended (or not restored yet by a restarted master).
  auto found = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value, experiment_id{id});
  if (!found) co_return out.error(found.error);
  auto ended = ended_experiment(id, *found);
  if (!ended) co_return out.error(ended.error());
  out.error(errc::invalid_input, "experiment " + std::to_string(id) + " has ended (" + pb::State_Name(ended->state()) +
                                     "): its searcher takes no operations");
}

void searcher_routes::add_to(http_router& server) {
  server.Get(R"(/api/v1/experiments/(\d+)/searcher_events)",
             guards.experiment_owner("drive the searcher of", [this](const http_request& req, http_response& res) {
               events(*parse_id(req.matches[1]), res);
             }));
  server.Post(R"(/api/v1/experiments/(\d+)/searcher_operations)",
              guards.experiment_owner("drive the searcher of", [this](const http_request& req, http_response& res) {
                auto id = *parse_id(req.matches[1]);
                auto body = body_of<pb::PostSearcherOperationsRequest>(req, res);
                if (!body) return;
                if (body->experiment_id() != 0 && body->experiment_id() != id)
                  return reply_error(res, errc::invalid_input,
                                     "experiment_id " + std::to_string(body->experiment_id()) +
                                         " in the body does not match experiment " + std::to_string(id) + " in the path");
                apply_operations(id, std::move(*body), reply_to{sys, res});
              }));
}

} // namespace det::runtime
