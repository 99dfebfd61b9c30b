#pragma once
// GET /prom/det-state-metrics: the cluster's state as Prometheus gauges (Determined's mapping
// gauges, agents, slots, queues, experiments and trials by state) and the master's own
// measurements (observability/), in the text format 0.0.4. Like every route, it needs a login:
// Prometheus scrapes with a long-lived token (det token create) as its bearer token.

#include <functional>
#include <string>

#include "runtime/http_types.hpp"

#include "runtime/account_routes.hpp"

namespace det::runtime {

struct prometheus_routes {
  caf::actor_system& sys;
  master_handles handles;
  std::function<http_handler(signed_in_handler)> signed_in;

  void add_to(http_router& server);
};

} // namespace det::runtime
