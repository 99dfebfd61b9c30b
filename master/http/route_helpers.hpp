#pragma once
// What the route files share: a request's JSON body as a message, names that go into paths, and
// routes that answer with one actor's reply; routes that ask more than once are coroutines
// (route_coroutine.hpp).

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "master/http/http_types.hpp"

#include "master/atoms.hpp"
#include "messages/json.hpp"
#include "master/http/actor_ask.hpp"
#include "master/http/http_replies.hpp"
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

/// The id the path's first group names; 0 when it names none (a route's pattern is \d+ there).
inline int64_t path_id(const http_request& req) {
  return parse_id(req.matches[1]).value_or(0);
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

/// Asks `dest` and answers the request, deferred, with the reply as JSON, or with the error's
/// status (status_of) and sentence.
template <class Reply, class Handle, class... Ts>
void answer_json(caf::actor_system& sys, http_response& res, const Handle& dest, Ts... xs) {
  ask_deferred<Reply>(
      sys, res, dest, [](const Reply& reply, http_response& made) { reply_json(made, reply); }, std::move(xs)...);
}

/// As answer_json(), but answers 404 with `missing` when `found(reply)` is false.
template <class Reply, class Found, class Handle, class... Ts>
void answer_json_found(caf::actor_system& sys, http_response& res, Found found, std::string missing,
                       const Handle& dest, Ts... xs) {
  ask_deferred<Reply>(
      sys, res, dest,
      [found, missing = std::move(missing)](const Reply& reply, http_response& made) {
        if (found(reply))
          reply_json(made, reply);
        else
          reply_error(made, errc::not_found, missing);
      },
      std::move(xs)...);
}

/// Asks `dest` for a change that answers true when done and answers the request with {}, or the error.
template <class Handle, class... Ts>
void answer_done(caf::actor_system& sys, http_response& res, const Handle& dest, Ts... xs) {
  ask_deferred<bool>(
      sys, res, dest, [](bool, http_response& made) { made.set_content("{}", "application/json"); }, std::move(xs)...);
}

} // namespace det::runtime
