#include "master/http/session_cookie.hpp"

#include "messages/errc.hpp"

namespace det::runtime {
namespace {

// Whether a request of `method` may change state, and so needs proof that the master's own page sent it.
bool changes_state(const std::string& method) { return method != "GET" && method != "HEAD"; }

} // namespace

std::string session_cookie(const std::string& token, int64_t lifespan_s, transport scheme) {
  return std::string(session_cookie_name) + "=" + token + "; Path=/; Max-Age=" + std::to_string(lifespan_s) +
         "; HttpOnly; SameSite=Strict" + secure_attribute(scheme);
}

std::string cleared_session_cookie(transport scheme) {
  return std::string(session_cookie_name) + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + secure_attribute(scheme);
}

caf::expected<std::string> presented_token_sha256(const http_request& req, transport scheme) {
  const auto authorization = req.get_header_value("Authorization");
  const auto session = req.cookie(session_cookie_name);
  if (!authorization.empty() || session.empty()) return bearer_sha256(authorization);
  // Browsers say where a request comes from; a page on another port of this host is "same-site",
  // and its reads (an event stream held open in the user's name) are refused too.
  const auto fetch_site = req.get_header_value("Sec-Fetch-Site");
  if (!fetch_site.empty() && fetch_site != "same-origin" && fetch_site != "none")
    return make_error(errc::forbidden, "a request with the web UI's session cookie must come from the web UI's own "
                                       "pages, not from a " + fetch_site + " page: scripts and the CLI send "
                                       "\"Authorization: Bearer TOKEN\" instead");
  if (changes_state(req.method)) {
    const auto own = scheme_of(scheme) + "://" + req.get_header_value("Host");
    const auto origin = req.get_header_value("Origin");
    if (origin != own)
      return make_error(errc::forbidden,
                        "a " + req.method + " with the web UI's session cookie must come from the web UI (Origin " + own +
                            "), not from " + (origin.empty() ? std::string("a request without an Origin") : "Origin " + origin) +
                            ": scripts and the CLI send \"Authorization: Bearer TOKEN\" instead");
  }
  return bearer_sha256("Bearer " + session);
}

} // namespace det::runtime
