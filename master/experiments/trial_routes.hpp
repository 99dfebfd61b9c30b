#pragma once
// The REST routes of trials, after Determined's /api/v1/trials: anyone logged in reads a trial,
// its metrics and its logs; a trial's own process calls the Core API (metrics, checkpoints,
// progress, searcher operations, early exit, preemption) with its run's token, which the trial
// checks. `det trial continue` is experiment_routes.hpp's: it makes an experiment.

#include <cstdint>

#include "master/http/http_types.hpp"

#include "master/http/route_guards.hpp"
#include "master/experiments/experiments_protocol.hpp"

namespace det {
struct master_handles;
}

namespace det::runtime {

struct trial_routes {
  caf::actor_system& sys;
  const master_handles& handles;
  master_front_actor front;
  route_guards& guards;

  void add_to(http_router& server);

 private:
  void core_api_routes(http_router& server);
  /// A Core API route: `fill` turns the request (with its JSON body parsed into a Body, for a
  /// POST) into the call for the trial the path's first number names.
  template <class Body, class Fill>
  void core_api_post(http_router& server, const char* pattern, Fill fill);
  template <class Fill>
  void core_api_get(http_router& server, const char* pattern, Fill fill);
  /// Sends `call`, with the trial id and the request's bearer token filled in, to the trial.
  void core_api(const http_request& req, http_response& res, int64_t trial, pb::CoreApiCall call);
};

} // namespace det::runtime
