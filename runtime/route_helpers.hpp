#pragma once
// What the route files of the gateway share: a request's JSON body as a message, and the waits on
// actors left to paths that answer synchronously (a stream's first check, the Prometheus scrape);
// routes ask with ask_deferred (actor_ask.hpp) or as coroutines (route_coroutine.hpp).

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/http_types.hpp"

#include "actors/local_interfaces.hpp"
#include "messages/json.hpp"
#include "runtime/actor_ask.hpp"
#include "runtime/http_replies.hpp"
#include "messages/errc.hpp"

namespace det::runtime {

/// Why `name` cannot name a `what` (a workspace, project or model: it goes into paths), as a
/// sentence, or "".
inline std::string bad_name_reason(const std::string& what, const std::string& name) {
  if (name.empty() || name.size() > 255)
    return "a " + what + " name has 1 to 255 characters";
  if (name.find('/') != std::string::npos)
    return "a " + what + " name may not contain '/', as \"" + name + "\" does";
  return "";
}

/// The request's body as a `Body` ("" reads as {}); nullopt with a 400 naming the problem.
template <class Body>
std::optional<Body> body_of(const http_request& req, http_response& res) {
  Body body;
  std::string error;
  if (from_json(req.body.empty() ? "{}" : req.body, body, error))
    return body;
  reply_error(res, errc::invalid_input, error);
  return std::nullopt;
}

} // namespace det::runtime
