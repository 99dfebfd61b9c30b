#pragma once
// The REST routes of workspaces and projects, after Determined's /api/v1/workspaces and
// /api/v1/projects: anyone logged in creates them; their owner or an admin changes or deletes them.

#include "master/http/http_types.hpp"

#include "master/http/route_guards.hpp"
#include "master/projects/projects_protocol.hpp"

namespace det::runtime {

struct project_routes {
  caf::actor_system& sys;
  projects_actor projects;
  route_guards& guards;

  void add_to(http_router& server);
};

} // namespace det::runtime
