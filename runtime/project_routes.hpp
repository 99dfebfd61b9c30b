#pragma once
// The REST routes of workspaces and projects, after Determined's /api/v1/workspaces and
// /api/v1/projects: anyone logged in creates them; their owner or an admin changes or deletes them.

#include <functional>

#include "runtime/http_types.hpp"

#include "runtime/account_routes.hpp"

namespace det::runtime {

struct project_routes {
  caf::actor_system& sys;
  projects_actor projects;
  std::function<http_handler(signed_in_handler)> signed_in;

  void add_to(http_router& server);
};

} // namespace det::runtime
