#pragma once
// The REST routes of commands, shells, notebooks and TensorBoards, after Determined's
// /api/v1/commands|shells|notebooks|tensorboards and /api/v1/tasks: anyone logged in starts them
// and reads them; their owner or an admin kills them.

#include <functional>

#include <httplib.h>

#include "runtime/account_routes.hpp"

namespace det::runtime {

struct task_routes {
  caf::actor_system& sys;
  master_handles handles;
  std::function<httplib::Server::Handler(signed_in_handler)> signed_in;

  void add_to(httplib::Server& server);
};

} // namespace det::runtime
