#pragma once
// The REST routes of a custom searcher's process, after Determined's: GET
// /api/v1/experiments/N/searcher_events (a long poll of up to 20 s that holds no handler thread)
// and POST /api/v1/experiments/N/searcher_operations. Only the experiment's owner or an admin
// drives its searcher.

#include <cstdint>
#include <functional>
#include <variant>

#include "master/http/http_types.hpp"

#include "master/http/route_coroutine.hpp"
#include "master/http/route_guards.hpp"
#include "master/experiments/experiments_protocol.hpp"

namespace det {
struct master_handles;
}

namespace det::runtime {

/// What one ask for a custom searcher's events gets: the events (none is an answer too), or the
/// response that answers the read instead (no such experiment, a storage error).
using searcher_events_answer = std::variant<pb::GetSearcherEventsResponse, http_response>;

struct searcher_routes {
  caf::actor_system& sys;
  const master_handles& handles;
  master_front_actor front;
  route_guards& guards;

  void add_to(http_router& server);

 private:
  /// The events not yet acknowledged, after waiting up to 20 s for one; an experiment that ended
  /// answers an experiment_inactive event.
  void events(int64_t id, http_response& res);
  /// Asks what experiment `id`'s searcher has for its process now, without waiting: `done` gets
  /// the events (an experiment that is no longer live: its end, as an experiment_inactive event)
  /// or the response that refuses the read, on one of CAF's threads.
  void events_then(int64_t id, std::function<void(searcher_events_answer)> done);
  /// The searcher's operations, acknowledging its events up to triggered_by_event.
  route_coroutine apply_operations(int64_t id, pb::PostSearcherOperationsRequest body, reply_to out);
};

} // namespace det::runtime
