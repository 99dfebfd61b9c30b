#pragma once
// The REST routes of commands, shells, notebooks and TensorBoards, after Determined's
// /api/v1/commands|shells|notebooks|tensorboards and /api/v1/tasks: anyone logged in starts them
// and reads them; their owner or an admin kills them.

#include <functional>

#include "runtime/http_types.hpp"

#include "runtime/account_routes.hpp"
#include "runtime/http_server.hpp"

namespace det::runtime {

struct task_routes {
  caf::actor_system& sys;
  master_handles handles;
  authenticator& auth;
  std::function<http_handler(signed_in_handler)> signed_in;

  void add_to(http_router& server);

  /// Where a request under /proxy/{task}/ goes: the running task's service, for its owner or an
  /// admin (a session as a Bearer header or the `auth` cookie), or anyone with a notebook's own
  /// token (?token=, "Authorization: token T", or the cookie its first use sets). Each request let
  /// through counts as a use of the task (its idle clock); a refused one does not, or anyone could
  /// keep a task from its idle_timeout.
  proxy_target proxy_target_of(const http_request& req);

 private:
  /// Restarts the idle clock of task `task_id`.
  void mark_used(const std::string& task_id);
  /// A TensorBoard's entrypoint: its trials' event directories, from the experiments and trials
  /// the request names; false with the reply made when one does not exist.
  bool add_event_directories(const pb::CreateTaskRequest& body, pb::Task& task, http_response& res);
};

} // namespace det::runtime
