#pragma once
// Whether the master's listeners speak plain HTTP or HTTPS: what URLs it hands out start with, and
// whether the cookies it sets are Secure.

#include <cstdint>
#include <string>

namespace det::runtime {

enum class transport : uint8_t {
  http,   ///< no [security.tls]
  https,  ///< [security.tls]: both listeners serve TLS only
};

/// "http" or "https".
inline std::string scheme_of(transport t) { return t == transport::https ? "https" : "http"; }

/// "; Secure" under TLS, so that a cookie is never sent in plain text; "" otherwise.
inline std::string secure_attribute(transport t) { return t == transport::https ? "; Secure" : ""; }

} // namespace det::runtime
