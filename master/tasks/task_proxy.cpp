#include "master/tasks/task_proxy.hpp"

#include <cctype>
#include <optional>
#include <sstream>
#include <utility>

#include "master/tasks/task_lifecycle.hpp"
#include "auth/credentials.hpp"
#include "caf/all.hpp"
#include "config/task_config.hpp"
#include "messages/caf_types.hpp"
#include "master/http/actor_ask.hpp"
#include "master/http/http_replies.hpp"
#include "master/http/route_helpers.hpp"
#include "master/http/session_cookie.hpp"
#include "messages/errc.hpp"

namespace det::runtime {
namespace {

proxy_target answered(http_response res) {
  proxy_target t;
  t.answer = std::move(res);
  return t;
}

proxy_target refusal(errc code, const std::string& sentence) {
  http_response res;
  reply_error(res, code, sentence);
  return answered(std::move(res));
}

// Whether `req` asks for a WebSocket (det tunnel, a notebook's kernel), which follows no redirect.
bool websocket_upgrade(const http_request& req) {
  auto upgrade = req.get_header_value("Upgrade");
  for (auto& c : upgrade) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return upgrade == "websocket";
}

std::string service_cookie_name(const std::string& id) { return "det_task_" + id; }

// Whether cookie `name` is det's (a session, a grant, a notebook's token), which no service gets.
bool is_det_cookie(const std::string& name) {
  return name == session_cookie_name || name == "auth" || name.rfind("det_proxy_", 0) == 0 ||
         name.rfind("det_task_", 0) == 0;
}

// The Cookie header without det's cookies ("" if nothing is left).
std::string services_cookies(const std::string& header) {
  std::string kept;
  std::istringstream pairs(header);
  for (std::string pair; std::getline(pairs, pair, ';');) {
    const auto start = pair.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    pair.erase(0, start);
    if (is_det_cookie(pair.substr(0, pair.find('=')))) continue;
    kept += (kept.empty() ? "" : "; ") + pair;
  }
  return kept;
}

// `target` (path and query, as sent) without the ticket parameter.
std::string without_ticket(const std::string& target) {
  const auto query = target.find('?');
  if (query == std::string::npos) return target;
  std::string kept;
  std::istringstream pairs(target.substr(query + 1));
  const std::string name = std::string(proxy_ticket_parameter) + "=";
  for (std::string pair; std::getline(pairs, pair, '&');)
    if (pair.rfind(name, 0) != 0 && pair != proxy_ticket_parameter) kept += (kept.empty() ? "" : "&") + pair;
  return target.substr(0, query) + (kept.empty() ? "" : "?" + kept);
}

} // namespace

std::string service_token_of(const pb::Task& task) {
  const auto at = task.proxy_path().find("?token=");
  return at == std::string::npos ? std::string{} : task.proxy_path().substr(at + 7);
}

std::string grant_cookie_name(const std::string& id) { return "det_proxy_" + id; }

void task_proxy::mark_used(const std::string& task_id) {
  pb::ContainerActivity used;
  used.set_allocation_id(task_id);
  caf::anon_send(handles.tasks, std::move(used));
}

void task_proxy::resolve(const http_request& req, ticket_use tickets, std::function<void(proxy_target)> done) {
  constexpr std::string_view prefix = "/proxy/";
  const auto rest = req.path.substr(prefix.size());
  const auto slash = rest.find('/');
  const auto id = rest.substr(0, slash);
  if (slash == std::string::npos)
    return done(refusal(errc::not_found, "a task's service is under /proxy/" + id + "/ (with the trailing slash)"));
  if (!address.is_own_host(id, req.get_header_value("Host")))
    return done(refusal(errc::not_found, "task " + id + " is served at its own host, " + address.origin_of(id, "") +
                                             ": each task has an origin of its own (proxy_host)"));
  ask_then(
      sys, handles.tasks, caf::duration{route_timeout},
      [this, req, tickets, done](pb::Task& task) { resolve_for(req, tickets, task, done); },
      [this, done](caf::error& e) {
        http_response res;
        reply_error(res, sys, e);
        done(answered(std::move(res)));
      },
      proxy_atom::value, id);
}

void task_proxy::resolve_for(const http_request& req, ticket_use tickets, const pb::Task& task,
                             std::function<void(proxy_target)> done) {
  const auto& id = task.id();
  const auto what = config::to_string(from_pb(task.kind())) + " " + id;
  const auto path_attributes = "; Path=/proxy/" + id + "/; HttpOnly; SameSite=Lax" + secure_attribute(scheme);
  const auto ticket = req.get_param_value(proxy_ticket_parameter);
  const auto token = service_token_of(task);
  const auto authorization = req.get_header_value("Authorization");
  if (!ticket.empty() && tickets == ticket_use::redeem) {
    auto grant = grants.redeem(ticket, id);
    if (!grant)
      return done(refusal(errc::unauthenticated, "this link to " + what + " has expired or was used already: open it again from the web "
                          "UI, or with det (its links last " + std::to_string(proxy_grants::ticket_lifespan.count()) +
                          " s and open it once)"));
    const auto cookie = grant_cookie_name(id) + "=" + *grant + path_attributes;
    if (!websocket_upgrade(req)) {
      // The ticket leaves the address bar (and the history) at once; the cookie opens the task from now on.
      http_response res;
      res.status = 302;
      res.set_header("Location", without_ticket(req.target));
      res.set_header("Set-Cookie", cookie);
      res.set_header("Cache-Control", "no-store");
      return done(answered(std::move(res)));
    }
    return done(service_of(req, task, ""));
  }
  if (!token.empty() &&
      (auth::same_secret(req.get_param_value("token"), token) ||
       auth::same_secret(authorization.rfind("token ", 0) == 0 ? authorization.substr(6) : "", token) ||
       auth::same_secret(req.cookie(service_cookie_name(id)), token)))
    return done(service_of(req, task, service_cookie_name(id) + "=" + token + path_attributes));
  auto refused = refusal(errc::unauthenticated, what + " opens only with its own link: open it from the web UI or with det (det " +
                                                    "notebook open, det tunnel); a user's session or token is not taken here");
  // A grant cookie opens it while the session that asked for it may still open it: a logout, a
  // revocation or a password change ends it.
  const auto grant = req.cookie(grant_cookie_name(id));
  const auto session = grant.empty() ? std::nullopt : grants.session_of(grant, id);
  if (!session) return done(std::move(refused));
  auth.authenticate_then(*session, [this, req, task, done, refused](caf::expected<principal> who) {
    if (!who || require_owner(*who, task.owner_id(), task.owner(), "task " + task.id(), "open")) return done(refused);
    done(service_of(req, task, ""));
  });
}

proxy_target task_proxy::service_of(const http_request& req, const pb::Task& task, std::string set_cookie) {
  const auto& id = task.id();
  const auto what = config::to_string(from_pb(task.kind())) + " " + id;
  if (!task.ready() || task.service_address().empty())
    return refusal(errc::unavailable, what + " is not ready yet; try again shortly");
  const auto colon = task.service_address().rfind(':');
  const auto port = colon == std::string::npos ? std::nullopt : parse_int<int>(task.service_address().substr(colon + 1));
  if (!port) return refusal(errc::upstream_failed, "the agent reported no usable address for " + id + ": " + task.service_address());
  proxy_target target;
  target.set_cookie = std::move(set_cookie);
  target.host = task.service_address().substr(0, colon);
  target.port = *port;
  target.raw_tcp = task.kind() == pb::TASK_KIND_SHELL;
  target.forwarded_cookie = services_cookies(req.get_header_value("Cookie"));
  const auto authorization = req.get_header_value("Authorization");
  if (bearer_token(authorization).empty()) target.forwarded_authorization = authorization;  // a notebook's "token T"
  mark_used(id);
  return target;
}

} // namespace det::runtime
