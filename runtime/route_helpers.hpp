#pragma once
// What the route files of the gateway share: a request's JSON body as a message, and asking an
// actor with the reply answered by the caller and an error answered with its status.

#include <chrono>
#include <optional>
#include <string>

#include "runtime/http_types.hpp"

#include "caf/scoped_actor.hpp"
#include "messages/json.hpp"
#include "runtime/http_replies.hpp"

namespace det::runtime {

/// How long a route waits for an actor's answer.
constexpr auto route_timeout = std::chrono::seconds(30);

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
  reply_error(res, 400, error);
  return std::nullopt;
}

/// Asks `dest` with `xs...`: `done` gets the reply; an error is answered with its status.
template <class Handle, class Done, class... Ts>
void ask_actor(caf::actor_system& sys, http_response& res, const Handle& dest, Done done, Ts&&... xs) {
  caf::scoped_actor self{sys};
  self->request(dest, route_timeout, std::forward<Ts>(xs)...).receive(done, [&](caf::error& e) { reply_error(res, sys, e); });
}

} // namespace det::runtime
