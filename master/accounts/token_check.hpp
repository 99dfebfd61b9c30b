#pragma once
// Whether a bearer token found in storage still speaks for its user: the one rule the REST
// gateway and the admin REPL's front door both apply.

#include <chrono>
#include <ctime>
#include <string>

#include "caf/error.hpp"
#include "messages/errc.hpp"
#include "storage/stored_rows.hpp"

namespace det {

inline std::chrono::system_clock::time_point time_of(const google::protobuf::Timestamp& t) {
  return std::chrono::system_clock::time_point{std::chrono::seconds(t.seconds())} +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(t.nanos()));
}

/// errc::unauthenticated saying why `found` no longer works at `now`, or no error.
inline caf::error token_refusal(const storage::token_holder& found, std::chrono::system_clock::time_point now) {
  const auto& t = found.token;
  if (t.revoked())
    return make_error(errc::unauthenticated, "the token was revoked (det user logout or det token revoke): log in again");
  if (time_of(t.expires_at()) <= now) {
    std::time_t seconds = t.expires_at().seconds();
    char text[32];
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
    return make_error(errc::unauthenticated, std::string{"the token expired at "} + text + ": log in again");
  }
  if (!found.user.active())
    return make_error(errc::unauthenticated, "user " + found.user.username() + " is deactivated");
  return {};
}

} // namespace det
