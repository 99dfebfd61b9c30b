#pragma once
// The bridge from HTTP routes to actors. A route asks an actor and returns; the answer comes back
// as a callback, from a short-lived actor of the route's own that makes the request with CAF's
// request(...).then(...), so no thread waits for it (a scoped_actor's receive would hold one of
// the server's handler threads until the answer came, and 32 slow answers would hold them all).

#include <chrono>
#include <utility>

#include "caf/actor_system.hpp"
#include "caf/event_based_actor.hpp"

#include "master/http/http_replies.hpp"
#include "master/http/http_types.hpp"

namespace det::runtime {

/// How long a route waits for an actor's answer.
constexpr auto route_timeout = std::chrono::seconds(30);

/// Asks `dest` with `xs...`: `on_reply` (taking the reply's values) or `on_error` (taking a
/// caf::error&: the actor's, or a timeout after `timeout`) runs once, on one of CAF's threads.
template <class Handle, class OnReply, class OnError, class... Ts>
void ask_then(caf::actor_system& sys, const Handle& dest, caf::duration timeout, OnReply on_reply, OnError on_error,
              Ts... xs) {
  sys.spawn([dest, timeout, on_reply = std::move(on_reply), on_error = std::move(on_error),
             xs...](caf::event_based_actor* self) mutable {
    self->request(dest, timeout, std::move(xs)...).then(std::move(on_reply), std::move(on_error));
  });
}

/// Defers `res`, asks `dest` with `xs...` and finishes `res` with what `answer(reply, res)` makes
/// of the `Reply` on a handler thread (JSON of a large page costs CPU), or with the error's status
/// and sentence.
template <class Reply, class Handle, class Answer, class... Ts>
void ask_deferred(caf::actor_system& sys, http_response& res, const Handle& dest, Answer answer, Ts... xs) {
  auto later = res.defer();
  ask_then(
      sys, dest, caf::duration{route_timeout},
      [later, answer](Reply& reply) {
        later->finish_with([answer, reply = std::move(reply)](http_response& made) { answer(reply, made); });
      },
      [later, &sys](caf::error& e) {
        http_response failed;
        reply_error(failed, sys, e);
        later->finish(std::move(failed));
      },
      std::move(xs)...);
}

} // namespace det::runtime
