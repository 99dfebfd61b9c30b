#include "master/accounts/account_routes.hpp"

#include <algorithm>
#include <optional>

#include "master/accounts/token_check.hpp"
#include "auth/credentials.hpp"
#include "auth/task_user.hpp"
#include "caf/all.hpp"
#include "messages/errc.hpp"
#include "master/http/route_coroutine.hpp"
#include "master/http/route_helpers.hpp"
#include "master/http/session_cookie.hpp"

namespace det::runtime {
namespace {
/// Why `name` cannot be its name, as a sentence, or "".
std::string bad_user_name_reason(const std::string& name) {
  if (name.empty() || name.size() > 64)
    return "a user name has 1 to 64 characters";
  if (name.find_first_not_of("0123456789") == std::string::npos)
    return "a user name may not be all digits (\"" + name + "\" would read as a user id)";
  if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != std::string::npos)
    return "a user name has only letters, digits, '_', '.' and '-', not \"" + name + "\"";
  return "";
}

constexpr int64_t default_access_token_lifespan_s = 30 * 24 * 3600;

/// `seconds` as security.max_token_lifespan would take it: "30d", "12h" or "90s".
std::string duration_text(int64_t seconds) {
  if (seconds % 86400 == 0) return std::to_string(seconds / 86400) + "d";
  if (seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds) + "s";
}

/// Why an access token may not last `lifespan_s`, as a sentence naming the setting, or "".
std::string bad_lifespan_reason(int64_t lifespan_s, int64_t max_lifespan_s) {
  if (lifespan_s <= 0) return "lifespan_s must be a positive number of seconds, not " + std::to_string(lifespan_s);
  if (lifespan_s > max_lifespan_s)
    return "a token may last at most " + duration_text(max_lifespan_s) +
           " (security.max_token_lifespan in master.toml), not " + duration_text(lifespan_s);
  return "";
}

} // namespace

void account_routes::add_to(http_router& server) {
  auto route = [this](auto coroutine) { return guards.signed_in(coroutine_route(sys, std::move(coroutine))); };
  // Issues a token for `user`: the token and what is stored of it, or nullopt once `out` has the error.
  auto issue = [this](pb::User user, pb::TokenKind kind, std::string description, int64_t lifespan_s,
                      reply_to out) -> route_coroutine_of<std::optional<std::pair<std::string, pb::AccessToken>>> {
    const auto token = auth::random_secret();
    const auto sha = auth::sha256(token);
    auto info = co_await ask<pb::AccessToken>(out, accounts, create_atom::value, user_id{user.id()}, sha, kind,
                                              description, lifespan_s);
    if (!info) {
      out.error(info.error);
      co_return std::nullopt;
    }
    auth.remember(principal{user.id(), user.username(), user.admin(), info->id(), sha, kind}, time_of(info->expires_at()));
    co_return std::pair{token, std::move(*info)};
  };
  // The user a path segment names (all digits is an id, anything else a name), or nullopt once
  // `out` has the error.
  auto user_named = [this](std::string segment, reply_to out) -> route_coroutine_of<std::optional<storage::stored_user>> {
    asked<storage::stored_user> found;
    if (const auto id = parse_id(segment)) {
      auto by_id = co_await ask<storage::stored_user>(out, accounts, get_atom::value, user_id{*id});
      found = std::move(by_id);
    } else {
      auto by_name = co_await ask<storage::stored_user>(out, accounts, get_atom::value, segment);
      found = std::move(by_name);
    }
    if (!found) {
      out.error(found.error);
      co_return std::nullopt;
    }
    co_return std::move(*found);
  };

  auto login = [this, issue](http_request req, pb::LoginRequest body, reply_to out) -> route_coroutine {
    auto found = co_await ask<storage::stored_user>(out, accounts, get_atom::value, body.username());
    if (!found && found.error != errc::not_found) co_return out.error(found.error);
    const bool known = static_cast<bool>(found);
    // An unknown name costs a hash as a known one does: the time taken does not tell names apart.
    static const std::string unknown_hash = auth::hash_password(auth::random_secret());
    http_response refused;
    auto matches = check_password(req, refused, body.username(), body.password(), known ? found->password_hash : unknown_hash);
    if (!matches) co_return out.finish(std::move(refused));
    if (!known || !*matches) co_return out.error(errc::unauthenticated, "unknown user or wrong password for \"" + body.username() + "\"");
    if (!found->user.active())
      co_return out.error(errc::unauthenticated, "user " + found->user.username() + " is deactivated: an admin can activate it");
    auto issued = co_await issue(found->user, pb::TOKEN_KIND_SESSION, "", session_lifespan_s, out);
    if (!issued) co_return;
    pb::LoginResponse session;
    session.set_token(issued->first);
    *session.mutable_user() = found->user;
    http_response res;
    reply_json(res, session);
    res.set_header("Set-Cookie", session_cookie(issued->first, session_lifespan_s, scheme));
    out.finish(std::move(res));
  };
  server.Post("/api/v1/auth/login", [this, login](const http_request& req, http_response& res) {
    if (auto body = body_of<pb::LoginRequest>(req, res)) login(req, std::move(*body), reply_to{sys, res});
  });
  server.Post("/api/v1/auth/logout", route([this](http_request, principal who, reply_to out) -> route_coroutine {
    if (who.kind != pb::TOKEN_KIND_SESSION)
      co_return out.error(errc::invalid_input, "this is an access token, not a login session: revoke it with det token revoke " +
                                   std::to_string(who.token_id) + " (DELETE /api/v1/tokens/" +
                                   std::to_string(who.token_id) + ")");
    auto removed = co_await ask<bool>(out, accounts, remove_atom::value, token_id{who.token_id});
    if (!removed) co_return out.error(removed.error);
    auth.forget_token(who.token_id);
    http_response res;
    res.set_content("{}", "application/json");
    res.set_header("Set-Cookie", cleared_session_cookie(scheme));
    out.finish(std::move(res));
  }));
  server.Get("/api/v1/me", route([this](http_request, principal who, reply_to out) -> route_coroutine {
    auto u = co_await ask<storage::stored_user>(out, accounts, get_atom::value, user_id{who.user_id});
    if (!u) co_return out.error(u.error);
    pb::GetMeResponse me;
    *me.mutable_user() = std::move(u->user);
    out.json(me);
  }));
  server.Get("/api/v1/users", route([this](http_request, principal, reply_to out) -> route_coroutine {
    auto users = co_await ask<pb::GetUsersResponse>(out, accounts, list_atom::value);
    json_or_error(out, users);
  }));
  server.Post("/api/v1/users", route([this](http_request req, principal who, reply_to out) -> route_coroutine {
    if (auto e = require_personal_token(who, "creating a user")) co_return out.error(e);
    if (auto e = require_admin(who, "creating a user")) co_return out.error(e);
    http_response refused;
    auto body = body_of<pb::PostUserRequest>(req, refused);
    if (!body) co_return out.finish(std::move(refused));
    if (auto why = bad_user_name_reason(body->username()); !why.empty()) co_return out.error(errc::invalid_input, why);
    if (auto why = auth::weak_password_reason(body->password()); !why.empty()) co_return out.error(errc::invalid_input, why);
    auto u = co_await ask<pb::User>(out, accounts, create_atom::value, body->username(),
                                    auth::hash_password(body->password()), body->admin());
    if (!u) co_return out.error(u.error);
    pb::PostUserResponse created;
    *created.mutable_user() = std::move(*u);
    out.json(created);
  }));
  server.Post(R"(/api/v1/users/([^/]+)/password)",
              route([this, user_named](http_request req, principal who, reply_to out) -> route_coroutine {
                if (auto e = require_personal_token(who, "changing a password")) co_return out.error(e);
                http_response refused;
                auto body = body_of<pb::SetUserPasswordRequest>(req, refused);
                if (!body) co_return out.finish(std::move(refused));
                auto user = co_await user_named(req.matches[1].str(), out);
                if (!user) co_return;
                if (user->user.id() != who.user_id) {
                  if (auto e = require_admin(who, "changing another user's password")) co_return out.error(e);
                } else if (auto matches = check_password(req, refused, who.username, body->old_password(),
                                                         user->password_hash);
                           !matches) {
                  co_return out.finish(std::move(refused));
                } else if (!*matches) {
                  // A stolen session alone must not be enough to take the account over.
                  co_return out.error(errc::forbidden, "changing your own password needs your current one in old_password, "
                                           "and that is not it");
                }
                if (auto why = auth::weak_password_reason(body->password()); !why.empty()) co_return out.error(errc::invalid_input, why);
                auto changed = co_await ask<bool>(out, accounts, password_atom::value, user_id{user->user.id()},
                                                  auth::hash_password(body->password()));
                if (!changed) co_return out.error(changed.error);
                auth.forget_user(user->user.id());  // its sessions and tokens were revoked with the change
                out.empty_json();
              }));
  server.Patch(R"(/api/v1/users/([^/]+))",
               route([this, user_named](http_request req, principal who, reply_to out) -> route_coroutine {
                 http_response refused;
                 auto body = body_of<pb::PatchUserRequest>(req, refused);
                 if (!body) co_return out.finish(std::move(refused));
                 const char* change = body->has_agent_user_group() ? "linking a user to a Unix user on agents"
                                                                   : "activating or deactivating a user";
                 if (auto e = require_personal_token(who, change)) co_return out.error(e);
                 if (auto e = require_admin(who, change)) co_return out.error(e);
                 if (!body->has_active() && !body->has_agent_user_group())
                   co_return out.error(errc::invalid_input, "the request changes nothing: set active or agent_user_group");
                 if (body->has_agent_user_group()) {
                   const auto& link = body->agent_user_group();
                   const auth::task_user asked_for{link.agent_uid(), link.agent_gid(), link.agent_user(), link.agent_group()};
                   if (auto why = auth::bad_link_reason(asked_for, task_uid_base); !why.empty())
                     co_return out.error(errc::invalid_input, why);
                 }
                 auto user = co_await user_named(req.matches[1].str(), out);
                 if (!user) co_return;
                 if (user->user.id() == who.user_id && body->has_active() && !body->active())
                   co_return out.error(errc::invalid_input, "an admin cannot deactivate itself: another admin must");
                 if (body->has_agent_user_group()) {
                   auto linked = co_await ask<bool>(out, accounts, update_atom::value, user_id{user->user.id()},
                                                    body->agent_user_group());
                   if (!linked) co_return out.error(linked.error);
                 }
                 if (!body->has_active()) co_return out.empty_json();
                 auto enabled = co_await ask<bool>(out, accounts, enable_atom::value, user_id{user->user.id()},
                                                   body->active());
                 if (!enabled) co_return out.error(enabled.error);
                 auth.forget_user(user->user.id());
                 out.empty_json();
               }));
  server.Post("/api/v1/tokens", route([this, issue](http_request req, principal who, reply_to out) -> route_coroutine {
    if (auto e = require_personal_token(who, "creating a token")) co_return out.error(e);
    http_response refused;
    auto body = body_of<pb::CreateAccessTokenRequest>(req, refused);
    if (!body) co_return out.finish(std::move(refused));
    const auto lifespan = body->lifespan_s() == 0 ? std::min(default_access_token_lifespan_s, max_token_lifespan_s)
                                                  : body->lifespan_s();
    if (auto why = bad_lifespan_reason(lifespan, max_token_lifespan_s); !why.empty()) co_return out.error(errc::invalid_input, why);
    auto u = co_await ask<storage::stored_user>(out, accounts, get_atom::value, user_id{who.user_id});
    if (!u) co_return out.error(u.error);
    if (!who.admin && !password_confirmed(req, refused, *u, body->password())) co_return out.finish(std::move(refused));
    auto issued = co_await issue(u->user, pb::TOKEN_KIND_ACCESS, body->description(), lifespan, out);
    if (!issued) co_return;
    pb::CreateAccessTokenResponse created;
    created.set_token(issued->first);
    *created.mutable_info() = std::move(issued->second);
    out.json(created);
  }));
  server.Get("/api/v1/tokens", route([this](http_request, principal who, reply_to out) -> route_coroutine {
    // An admin sees everyone's, as it may revoke any.
    auto tokens = co_await ask<pb::GetAccessTokensResponse>(out, accounts, list_atom::value,
                                                            user_id{who.admin ? 0 : who.user_id});
    json_or_error(out, tokens);
  }));
  server.Delete(R"(/api/v1/tokens/(\d+))", route([this](http_request req, principal who, reply_to out) -> route_coroutine {
    // A task's token revoking its owner's logins would let whoever reads a process's environment
    // lock its owner out.
    if (auto e = require_personal_token(who, "revoking a token")) co_return out.error(e);
    const auto id = path_id(req);
    auto token = co_await ask<pb::AccessToken>(out, accounts, get_atom::value, token_id{id});
    if (!token) co_return out.error(token.error);
    if (auto e = require_owner(who, token->user_id(), token->username(), "token " + std::to_string(id), "revoke"))
      co_return out.error(e);
    auto removed = co_await ask<bool>(out, accounts, remove_atom::value, token_id{id});
    if (!removed) co_return out.error(removed.error);
    auth.forget_token(id);
    out.empty_json();
  }));
}

bool account_routes::password_confirmed(const http_request& req, http_response& res, const storage::stored_user& user,
                                        const std::string& password) {
  const std::string refusal = "creating a token needs the password of user " + user.user.username() +
                              " again, in password (det token create asks for it), or an admin";
  if (password.empty()) {
    reply_error(res, errc::forbidden, refusal);
    return false;
  }
  auto matches = check_password(req, res, user.user.username(), password, user.password_hash);
  if (matches && !*matches)
    reply_error(res, errc::forbidden, refusal + ", and that is not it");
  return matches.value_or(false);
}

std::optional<bool> account_routes::check_password(const http_request& req, http_response& res,
                                                   const std::string& username, const std::string& password,
                                                   const std::string& hash) {
  const auto now = auth::login_throttle::clock::now();
  if (auto wait = throttle.account_wait(req.remote_addr, username, now); wait.count() > 0) {
    reply_error(res, errc::too_many_requests, "too many failed logins as \"" + username + "\" from all addresses together: try again in " +
                              std::to_string(wait.count()) + " s");
    return std::nullopt;
  }
  if (auto wait = throttle.wait(req.remote_addr, username, now); wait.count() > 0) {
    reply_error(res, errc::too_many_requests, "too many failed logins as \"" + username + "\" from " + req.remote_addr +
                              ": try again in " + std::to_string(wait.count()) + " s");
    return std::nullopt;
  }
  if (!auth::verify_password(password, hash)) {
    throttle.failed(req.remote_addr, username, now);
    return false;
  }
  throttle.succeeded(req.remote_addr, username, now);
  return true;
}

} // namespace det::runtime
