#pragma once
// The REST routes of the cluster's resources, after Determined's: anyone logged in reads the
// resource pools, their provisioners, the job queues and the agents; admins enable, disable and
// drain agents and slots.

#include <string>

#include "master/http/http_types.hpp"

#include "master/http/route_coroutine.hpp"
#include "master/http/route_guards.hpp"

namespace det {
struct master_handles;
}

namespace det::runtime {

struct scheduling_routes {
  caf::actor_system& sys;
  const master_handles& handles;
  route_guards& guards;

  void add_to(http_router& server);

 private:
  /// What a route shows of the pools.
  enum class pool_view { resource_pools, provisioners, job_queues };

  /// Each pool's state and jobs, and its provisioner's (a provisioner busy in a long launch
  /// command answers late: its pool then shows none rather than hold up the route), as `view`
  /// shows them; job queues of `only_pool` alone when it is not empty.
  route_coroutine answer_pools(pool_view view, std::string only_pool, reply_to out);
  /// det agent|slot enable|disable: `slot` -1 for the whole agent.
  void enable_agent(const http_request& req, http_response& res, int32_t slot);
};

} // namespace det::runtime
