#pragma once
// POST /api/v1/trials/{id}/alerts: Determined's core_context.alert(). det has no webhooks, so an
// alert becomes a line of the trial's logs in the stream "alert", which the trial's page, `det
// trial logs` and GET /api/v1/trials/{id}/logs show. Only the trial's own process may raise one:
// the request carries the allocation token of the trial's current run.

#include "master/http/http_types.hpp"

#include "master/experiments/experiments_protocol.hpp"
#include "master/persistence/persistence_protocol.hpp"

namespace det::runtime {

struct alert_routes {
  caf::actor_system& sys;
  master_front_actor front;
  persistence_actor persistence;

  void add_to(http_router& server);
};

} // namespace det::runtime
