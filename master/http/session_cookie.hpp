#pragma once
// The web UI's session: the login's token in an HttpOnly, SameSite=Strict cookie (Secure under
// TLS), which no script reads, beside the bearer tokens the CLI and scripts send. Browsers send a
// cookie to every port of its host, and count another port as the same site, so a page a task
// serves on the proxy's port could still make the browser send it: a request the cookie
// authenticates may change state only if its Origin is the master's own (browsers set Origin on
// every request but GET and HEAD, and a page cannot forge it), and none at all that the browser
// says another page sent (Sec-Fetch-Site other than same-origin or none).

#include <cstdint>
#include <string>

#include "caf/expected.hpp"
#include "master/http/authenticator.hpp"
#include "master/http/http_types.hpp"
#include "master/http/transport.hpp"

namespace det::runtime {

constexpr const char* session_cookie_name = "det_session";

/// The Set-Cookie value that keeps session `token` for `lifespan_s` seconds.
std::string session_cookie(const std::string& token, int64_t lifespan_s, transport scheme);
/// The Set-Cookie value that ends it (a logout).
std::string cleared_session_cookie(transport scheme);

/// The SHA-256 of the token `req` presents: its "Authorization: Bearer" header's, else its session
/// cookie's, which must not come from another site's or origin's page (Sec-Fetch-Site) and must
/// come with the master's own Origin unless the method is GET or HEAD (forbidden with a sentence
/// if not); unauthenticated with a sentence when it presents none.
caf::expected<std::string> presented_token_sha256(const http_request& req, transport scheme);


} // namespace det::runtime
