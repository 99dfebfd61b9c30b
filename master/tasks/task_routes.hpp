#pragma once
// The REST routes of commands, shells, notebooks and TensorBoards, after Determined's
// /api/v1/commands|shells|notebooks|tensorboards and /api/v1/tasks: anyone logged in starts them
// and reads them; their owner or an admin kills them, and opens their services: GET /proxy/{task}/
// on the master sends the browser to the proxy listener with a ticket for that task alone, and POST
// /api/v1/tasks/{task}/proxy_ticket hands one to the CLI (det tunnel).

#include "master/http/http_types.hpp"

#include "master/http/route_guards.hpp"
#include "master/local_interfaces.hpp"
#include "master/tasks/proxy_address.hpp"
#include "master/tasks/proxy_grants.hpp"
#include "master/http/route_coroutine.hpp"
#include "master/http/transport.hpp"

namespace det::runtime {

struct task_routes {
  caf::actor_system& sys;
  master_handles handles;
  authenticator& auth;
  route_guards& guards;
  proxy_grants& grants;
  const proxy_address& address;
  transport scheme;

  void add_to(http_router& server);

 private:
  /// GET /proxy/{task}/...: a redirect to the same path on the proxy's origin, with a ticket when
  /// the caller (session cookie or bearer token) is the task's owner or an admin, as it was with a
  /// notebook's own ?token=; to the login page without either.
  route_coroutine open_service(http_request req, reply_to out);
  /// POST /api/v1/tasks/{task}/proxy_ticket: the task's address on the proxy, with a ticket.
  route_coroutine proxy_ticket(http_request req, principal who, reply_to out);
  /// POST /api/v1/{kind}s: a task made from the request's config (and context).
  route_coroutine create_task(pb::TaskKind kind, pb::CreateTaskRequest body, principal who, reply_to out);
  /// The live task `id` of `kind`, for its owner or an admin: nullopt once `out` has the refusal.
  route_coroutine_of<std::optional<pb::Task>> owned_task(std::string id, pb::TaskKind kind, principal who,
                                                         std::string verb, reply_to out);
  /// The proxy's origin of task `id` for a client that reached the master as `req` did; "" with
  /// a 400 answered when its Host header names no usable host.
  std::string proxy_origin_of(const std::string& id, const http_request& req, http_response& res);
  /// `url` on the proxy with a ticket for `task` on behalf of `who` added to its query; "" with
  /// the refusal answered when `who` may not open it (not its owner or an admin; a task's token).
  std::string ticket_url(const pb::Task& task, const std::string& url, const principal& who, http_response& res);
  /// A TensorBoard's entrypoint: its trials' event directories, from the experiments and trials
  /// the request names; false once `out` has the refusal when one does not exist.
  route_coroutine_of<bool> add_event_directories(const pb::CreateTaskRequest& body, pb::Task& task, reply_to out);
};

} // namespace det::runtime
