#pragma once
// The REST routes of users, sessions and access tokens: /api/v1/auth/login|logout, /api/v1/me,
// /api/v1/users, /api/v1/tokens. A login answers with its token and keeps it in the web UI's
// HttpOnly session cookie too (master/http/session_cookie.hpp); a logout ends both.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "master/http/http_types.hpp"

#include "auth/login_throttle.hpp"
#include "master/http/authenticator.hpp"
#include "master/http/route_guards.hpp"
#include "master/http/transport.hpp"

namespace det::runtime {

struct account_routes {
  caf::actor_system& sys;
  accounts_actor accounts;
  authenticator& auth;
  int64_t session_lifespan_s;
  /// security.max_token_lifespan: the longest an access token may last.
  int64_t max_token_lifespan_s;
  /// security.task_uid_base: links into the unlinked users' uids are refused.
  int64_t task_uid_base;
  route_guards& guards;
  auth::login_throttle throttle;
  /// Whether the session cookie a login sets is Secure.
  transport scheme = transport::http;

  void add_to(http_router& server);

  /// Whether `password` is `username`'s (whose stored hash is `hash`), checked through the
  /// throttle that slows guessing, for a login and a password change alike; nullopt, with 429
  /// answered, while the caller's address must wait.
  std::optional<bool> check_password(const http_request& req, http_response& res, const std::string& username,
                                     const std::string& password, const std::string& hash);

  /// Whether `password` is `user`'s, asked again of a session before it makes a lasting token (a
  /// stolen session alone must not outlive its logout); false with 403 or 429 answered if not.
  bool password_confirmed(const http_request& req, http_response& res, const storage::stored_user& user,
                          const std::string& password);
};


} // namespace det::runtime
