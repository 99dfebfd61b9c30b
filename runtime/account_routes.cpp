#include "runtime/account_routes.hpp"

#include <algorithm>
#include <optional>

#include "actors/token_check.hpp"
#include "auth/credentials.hpp"
#include "auth/task_user.hpp"
#include "caf/all.hpp"
#include "messages/errc.hpp"
#include "runtime/route_helpers.hpp"
#include "runtime/session_cookie.hpp"

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
  // Asks the accounts actor; `done` gets the reply, errors go to the client with their status.
  auto ask = [this](http_response& res, auto done, auto... xs) { ask_actor(sys, res, accounts, done, xs...); };
  // Issues a token for `user` and answers with it.
  auto issue = [this, ask](http_response& res, const pb::User& user, pb::TokenKind kind, const std::string& description,
                           int64_t lifespan_s, auto reply) {
    const auto token = auth::random_secret();
    const auto sha = auth::sha256(token);
    ask(res,
        [&](pb::AccessToken& info) {
          auth.remember(principal{user.id(), user.username(), user.admin(), info.id(), sha, kind}, time_of(info.expires_at()));
          reply(token, std::move(info));
        },
        create_atom::value, user_id{user.id()}, sha, kind, description, lifespan_s);
  };
  // The user a path segment names: all digits is an id, anything else a name.
  auto user_named = [this](const std::string& segment, caf::error& failure) {
    storage::stored_user found;
    caf::scoped_actor self{sys};
    auto on_error = [&](caf::error& e) { failure = std::move(e); };
    if (auto id = parse_id(segment))
      self->request(accounts, route_timeout, get_atom::value, user_id{*id})
          .receive([&](storage::stored_user& u) { found = std::move(u); }, on_error);
    else
      self->request(accounts, route_timeout, get_atom::value, segment)
          .receive([&](storage::stored_user& u) { found = std::move(u); }, on_error);
    return found;
  };

  server.Post("/api/v1/auth/login", [this, ask, issue](const http_request& req, http_response& res) {
    auto body = body_of<pb::LoginRequest>(req, res);
    if (!body)
      return;
    storage::stored_user found;
    bool known = false;
    caf::scoped_actor self{sys};
    caf::error failure;
    self->request(accounts, route_timeout, get_atom::value, body->username())
        .receive([&](storage::stored_user& u) { found = std::move(u), known = true; }, [&](caf::error& e) { failure = std::move(e); });
    if (failure && failure != errc::not_found)
      return reply_error(res, sys, failure);
    // An unknown name costs a hash as a known one does: the time taken does not tell names apart.
    static const std::string unknown_hash = auth::hash_password(auth::random_secret());
    auto matches = check_password(req, res, body->username(), body->password(), known ? found.password_hash : unknown_hash);
    if (!matches)
      return;
    if (!known || !*matches)
      return reply_error(res, 401, "unknown user or wrong password for \"" + body->username() + "\"");
    if (!found.user.active())
      return reply_error(res, 401, "user " + found.user.username() + " is deactivated: an admin can activate it");
    issue(res, found.user, pb::TOKEN_KIND_SESSION, "", session_lifespan_s, [&](const std::string& token, pb::AccessToken) {
      pb::LoginResponse out;
      out.set_token(token);
      *out.mutable_user() = found.user;
      reply_json(res, out);
      res.set_header("Set-Cookie", session_cookie(token, session_lifespan_s, scheme));
    });
  });
  server.Post("/api/v1/auth/logout", signed_in([this, ask](const http_request&, http_response& res, const principal& who) {
    if (who.kind != pb::TOKEN_KIND_SESSION)
      return reply_error(res, 400, "this is an access token, not a login session: revoke it with det token revoke " +
                                       std::to_string(who.token_id) + " (DELETE /api/v1/tokens/" +
                                       std::to_string(who.token_id) + ")");
    ask(res, [&](bool) {
      auth.forget_token(who.token_id);
      res.set_content("{}", "application/json");
      res.set_header("Set-Cookie", cleared_session_cookie(scheme));
    }, remove_atom::value, token_id{who.token_id});
  }));
  server.Get("/api/v1/me", signed_in([this, ask](const http_request&, http_response& res, const principal& who) {
    ask(res, [&](storage::stored_user& u) {
      pb::GetMeResponse out;
      *out.mutable_user() = std::move(u.user);
      reply_json(res, out);
    }, get_atom::value, user_id{who.user_id});
  }));
  server.Get("/api/v1/users", signed_in([ask](const http_request&, http_response& res, const principal&) {
    ask(res, [&](pb::GetUsersResponse& out) { reply_json(res, out); }, list_atom::value);
  }));
  server.Post("/api/v1/users", signed_in([this, ask](const http_request& req, http_response& res, const principal& who) {
    if (auto e = require_personal_token(who, "creating a user"))
      return reply_error(res, sys, e);
    if (auto e = require_admin(who, "creating a user"))
      return reply_error(res, sys, e);
    auto body = body_of<pb::PostUserRequest>(req, res);
    if (!body)
      return;
    if (auto why = bad_user_name_reason(body->username()); !why.empty())
      return reply_error(res, 400, why);
    if (auto why = auth::weak_password_reason(body->password()); !why.empty())
      return reply_error(res, 400, why);
    ask(res, [&](pb::User& u) {
      pb::PostUserResponse out;
      *out.mutable_user() = std::move(u);
      reply_json(res, out);
    }, create_atom::value, body->username(), auth::hash_password(body->password()), body->admin());
  }));
  server.Post(R"(/api/v1/users/([^/]+)/password)",
              signed_in([this, ask, user_named](const http_request& req, http_response& res, const principal& who) {
                if (auto e = require_personal_token(who, "changing a password"))
                  return reply_error(res, sys, e);
                auto body = body_of<pb::SetUserPasswordRequest>(req, res);
                if (!body)
                  return;
                caf::error failure;
                auto user = user_named(req.matches[1].str(), failure);
                if (failure)
                  return reply_error(res, sys, failure);
                if (user.user.id() != who.user_id) {
                  if (auto e = require_admin(who, "changing another user's password"))
                    return reply_error(res, sys, e);
                } else if (auto matches = check_password(req, res, who.username, body->old_password(), user.password_hash);
                           !matches) {
                  return;
                } else if (!*matches) {
                  // A stolen session alone must not be enough to take the account over.
                  return reply_error(res, 403, "changing your own password needs your current one in old_password, "
                                               "and that is not it");
                }
                if (auto why = auth::weak_password_reason(body->password()); !why.empty())
                  return reply_error(res, 400, why);
                ask(res, [&](bool) {
                  auth.forget_user(user.user.id());  // its sessions and tokens were revoked with the change
                  res.set_content("{}", "application/json");
                }, password_atom::value, user_id{user.user.id()}, auth::hash_password(body->password()));
              }));
  server.Patch(R"(/api/v1/users/([^/]+))",
               signed_in([this, ask, user_named](const http_request& req, http_response& res, const principal& who) {
                 auto body = body_of<pb::PatchUserRequest>(req, res);
                 if (!body)
                   return;
                 const char* change = body->has_agent_user_group() ? "linking a user to a Unix user on agents"
                                                                   : "activating or deactivating a user";
                 if (auto e = require_personal_token(who, change))
                   return reply_error(res, sys, e);
                 if (auto e = require_admin(who, change))
                   return reply_error(res, sys, e);
                 if (!body->has_active() && !body->has_agent_user_group())
                   return reply_error(res, 400, "the request changes nothing: set active or agent_user_group");
                 if (body->has_agent_user_group()) {
                   const auto& link = body->agent_user_group();
                   const auth::task_user asked{link.agent_uid(), link.agent_gid(), link.agent_user(), link.agent_group()};
                   if (auto why = auth::bad_link_reason(asked, task_uid_base); !why.empty())
                     return reply_error(res, 400, why);
                 }
                 caf::error failure;
                 auto user = user_named(req.matches[1].str(), failure);
                 if (failure)
                   return reply_error(res, sys, failure);
                 if (user.user.id() == who.user_id && body->has_active() && !body->active())
                   return reply_error(res, 400, "an admin cannot deactivate itself: another admin must");
                 if (body->has_agent_user_group()) {
                   caf::scoped_actor self{sys};
                   caf::error linked;
                   self->request(accounts, route_timeout, update_atom::value, user_id{user.user.id()},
                                 body->agent_user_group())
                       .receive([](bool) {}, [&](caf::error& e) { linked = std::move(e); });
                   if (linked)
                     return reply_error(res, sys, linked);
                 }
                 if (!body->has_active())
                   return res.set_content("{}", "application/json");
                 ask(res, [&](bool) {
                   auth.forget_user(user.user.id());
                   res.set_content("{}", "application/json");
                 }, enable_atom::value, user_id{user.user.id()}, body->active());
               }));
  server.Post("/api/v1/tokens", signed_in([this, ask, issue](const http_request& req, http_response& res, const principal& who) {
    if (auto e = require_personal_token(who, "creating a token"))
      return reply_error(res, sys, e);
    auto body = body_of<pb::CreateAccessTokenRequest>(req, res);
    if (!body)
      return;
    const auto lifespan = body->lifespan_s() == 0 ? std::min(default_access_token_lifespan_s, max_token_lifespan_s)
                                                  : body->lifespan_s();
    if (auto why = bad_lifespan_reason(lifespan, max_token_lifespan_s); !why.empty())
      return reply_error(res, 400, why);
    ask(res, [&](storage::stored_user& u) {
      if (!who.admin && !password_confirmed(req, res, u, body->password()))
        return;
      issue(res, u.user, pb::TOKEN_KIND_ACCESS, body->description(), lifespan, [&](const std::string& token, pb::AccessToken info) {
        pb::CreateAccessTokenResponse out;
        out.set_token(token);
        *out.mutable_info() = std::move(info);
        reply_json(res, out);
      });
    }, get_atom::value, user_id{who.user_id});
  }));
  server.Get("/api/v1/tokens", signed_in([ask](const http_request&, http_response& res, const principal& who) {
    // An admin sees everyone's, as it may revoke any.
    ask(res, [&](pb::GetAccessTokensResponse& out) { reply_json(res, out); }, list_atom::value,
        user_id{who.admin ? 0 : who.user_id});
  }));
  server.Delete(R"(/api/v1/tokens/(\d+))", signed_in([this, ask](const http_request& req, http_response& res, const principal& who) {
    // A task's token revoking its owner's logins would let whoever reads a process's environment
    // lock its owner out.
    if (auto e = require_personal_token(who, "revoking a token"))
      return reply_error(res, sys, e);
    const auto id = parse_id(req.matches[1]).value_or(0);
    ask(res, [&](pb::AccessToken& token) {
      if (auto e = require_owner(who, token.user_id(), token.username(), "token " + std::to_string(id), "revoke"))
        return reply_error(res, sys, e);
      ask(res, [&](bool) {
        auth.forget_token(id);
        res.set_content("{}", "application/json");
      }, remove_atom::value, token_id{id});
    }, get_atom::value, token_id{id});
  }));
}

bool account_routes::password_confirmed(const http_request& req, http_response& res, const storage::stored_user& user,
                                        const std::string& password) {
  const std::string refusal = "creating a token needs the password of user " + user.user.username() +
                              " again, in password (det token create asks for it), or an admin";
  if (password.empty()) {
    reply_error(res, 403, refusal);
    return false;
  }
  auto matches = check_password(req, res, user.user.username(), password, user.password_hash);
  if (matches && !*matches)
    reply_error(res, 403, refusal + ", and that is not it");
  return matches.value_or(false);
}

std::optional<bool> account_routes::check_password(const http_request& req, http_response& res,
                                                   const std::string& username, const std::string& password,
                                                   const std::string& hash) {
  const auto now = auth::login_throttle::clock::now();
  if (auto wait = throttle.account_wait(req.remote_addr, username, now); wait.count() > 0) {
    reply_error(res, 429, "too many failed logins as \"" + username + "\" from all addresses together: try again in " +
                              std::to_string(wait.count()) + " s");
    return std::nullopt;
  }
  if (auto wait = throttle.wait(req.remote_addr, username, now); wait.count() > 0) {
    reply_error(res, 429, "too many failed logins as \"" + username + "\" from " + req.remote_addr +
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
