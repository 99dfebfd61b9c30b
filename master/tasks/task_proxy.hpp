#pragma once
// The proxy listener's side of tasks (issue 35): the task a request under /proxy/{task}/ is for,
// whether it carries something that opens that task and nothing else (a ticket from the master,
// the grant cookie a ticket becomes, a notebook's own token), and which of its headers the service
// gets. A user's session or access token opens nothing here: the proxy's pages are other users'
// code, and the proxy's origin is apart from the web UI's so that they cannot use the UI's session.

#include <cstdint>
#include <functional>
#include <string>

#include "master/local_interfaces.hpp"
#include "master/http/authenticator.hpp"
#include "master/http/http_server.hpp"
#include "master/tasks/proxy_address.hpp"
#include "master/tasks/proxy_grants.hpp"
#include "master/http/transport.hpp"

namespace det::runtime {

/// The query parameter that carries a ticket to the proxy listener.
constexpr const char* proxy_ticket_parameter = "det_proxy_token";

/// Whether a request may use up the ticket it carries: a body's size is checked before the request
/// is resolved, and must not spend it.
enum class ticket_use : uint8_t { redeem, keep };

struct task_proxy {
  caf::actor_system& sys;
  master_handles handles;
  authenticator& auth;
  proxy_grants& grants;
  const proxy_address& address;
  transport scheme;

  /// Where a request to the proxy listener goes: the running task's service, for a ticket (first
  /// answered with its grant cookie and a redirect to the same URL without it), the task's grant
  /// cookie while the session that asked for it lasts, or a notebook's own token (?token=,
  /// "Authorization: token T", or the cookie its first use sets). Each request let through counts
  /// as a use of the task (its idle clock); a refused one does not, or anyone could keep a task
  /// from its idle_timeout.
  /// `done` gets it without the caller waiting, once the tasks actor has said where the task runs.
  void resolve(const http_request& req, ticket_use tickets, std::function<void(proxy_target)> done);

 private:
  /// resolve() for the running task `task`.
  void resolve_for(const http_request& req, ticket_use tickets, const pb::Task& task,
                   std::function<void(proxy_target)> done);
  /// Where its service is, for a request let through: with `set_cookie` set on the relayed answer.
  proxy_target service_of(const http_request& req, const pb::Task& task, std::string set_cookie);
  /// Restarts the idle clock of task `task_id`.
  void mark_used(const std::string& task_id);
};

/// The notebook token in a task's proxy path ("/proxy/ID/?token=T"), or "".
std::string service_token_of(const pb::Task& task);

/// The name of the cookie that holds task `id`'s grant.
std::string grant_cookie_name(const std::string& id);

} // namespace det::runtime
