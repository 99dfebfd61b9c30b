#pragma once
// GET /prom/det-state-metrics: the cluster's state as Prometheus gauges (Determined's mapping
// gauges, agents, slots, queues, experiments and trials by state) and the master's own
// measurements (observability/), in the text format 0.0.4. Like every route, it needs a login:
// Prometheus scrapes with a long-lived token (det token create) as its bearer token.

#include <functional>
#include <string>

#include "master/http/http_types.hpp"

#include "master/http/route_guards.hpp"
#include "master/local_interfaces.hpp"

namespace det::runtime {

struct prometheus_routes {
  caf::actor_system& sys;
  master_handles handles;
  route_guards& guards;

  void add_to(http_router& server);
};

} // namespace det::runtime
