#pragma once
// Routes written as C++20 coroutines: `co_await ask<Reply>(out, actor, message...)` suspends the
// route until the actor answers, holding no thread meanwhile, and the route goes on on a handler
// thread. A route that asks several actors one after the other (the owner check, then the
// change) reads as it runs. Built on ask_then (master/http/actor_ask.hpp); files that use it compile
// as C++20 (master/http/CMakeLists.txt).
//
// Write each co_await as a statement of its own (`auto x = co_await ...;`), never inside a
// condition, ?:, && or ||: with GCC 12 a co_await in a ?: corrupted the heap here (the user
// lookup of the password and user routes), and the same code as statements does not.

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "caf/error.hpp"
#include "messages/errc.hpp"
#include "master/http/actor_ask.hpp"
#include "master/http/http_replies.hpp"
#include "master/http/http_types.hpp"

namespace google::protobuf {
class Message;
}

namespace det::runtime {

/// Where a route coroutine's answer goes: its request's deferred response, and what asks need.
class reply_to {
 public:
  /// Defers `res`: the coroutine's answer is what finishes it.
  reply_to(caf::actor_system& sys, http_response& res) : sys_(&sys), later_(res.defer()), offload_(res.offload) {}

  void json(const google::protobuf::Message& msg) const {
    http_response res;
    reply_json(res, msg);
    later_->finish(std::move(res));
  }
  void empty_json() const {
    http_response res;
    res.set_content("{}", "application/json");
    later_->finish(std::move(res));
  }
  void error(errc code, const std::string& sentence) const {
    http_response res;
    reply_error(res, code, sentence);
    later_->finish(std::move(res));
  }
  void error(const caf::error& e) const {
    http_response res;
    reply_error(res, *sys_, e);
    later_->finish(std::move(res));
  }
  void finish(http_response res) const { later_->finish(std::move(res)); }
  /// The answer of `handler` (a route that may defer its own) to `req`.
  void answer_with(const http_handler& handler, const http_request& req) const {
    http_response res;
    res.offload = offload_;
    handler(req, res);
    if (res.deferred)
      res.deferred->when_finished([later = later_](const http_response& made) { later->finish(made); });
    else
      later_->finish(std::move(res));
  }

  caf::actor_system& system() const { return *sys_; }
  const offload_function& offload() const { return offload_; }
  const std::shared_ptr<deferred_response>& deferred() const { return later_; }

 private:
  caf::actor_system* sys_;
  std::shared_ptr<deferred_response> later_;
  offload_function offload_;
};

/// The return type of a route coroutine. It starts at once, runs to its first co_await on the
/// calling thread, and frees itself when it ends; nothing awaits it. An exception it lets out
/// answers its request with a 500 naming it (its promise finds the reply_to among its arguments).
struct route_coroutine {
  struct promise_type {
    std::shared_ptr<deferred_response> later;

    promise_type() = default;
    template <class... Args>
    explicit promise_type(Args&... args) {
      (keep(args), ...);
    }
    void keep(const reply_to& to) { later = to.deferred(); }
    template <class T>
    void keep(const T&) {}

    route_coroutine get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept {
      try {
        throw;
      } catch (const std::exception& e) {
        if (later) later->finish(answer_failed(e.what()));
      } catch (...) {
        if (later) later->finish(answer_failed("an unknown error"));
      }
    }
  };
};

/// A step of a route that a route coroutine awaits for its result (`co_await step(...)`): it starts
/// when awaited, and its caller goes on, on the same thread, when it has co_returned a T.
template <class T>
class route_coroutine_of {
 public:
  struct promise_type {
    std::optional<T> value;
    std::exception_ptr failure;
    std::coroutine_handle<> caller;

    route_coroutine_of get_return_object() noexcept {
      return route_coroutine_of{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct back_to_caller {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> done) noexcept {
        return done.promise().caller;
      }
      void await_resume() noexcept {}
    };
    back_to_caller final_suspend() noexcept { return {}; }
    void return_value(T v) { value.emplace(std::move(v)); }
    void unhandled_exception() noexcept { failure = std::current_exception(); }
  };

  route_coroutine_of(route_coroutine_of&& other) noexcept : step_(std::exchange(other.step_, {})) {}
  route_coroutine_of(const route_coroutine_of&) = delete;
  ~route_coroutine_of() {
    if (step_) step_.destroy();
  }

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) noexcept {
    step_.promise().caller = caller;
    return step_;
  }
  T await_resume() {
    if (step_.promise().failure) std::rethrow_exception(step_.promise().failure);
    return std::move(*step_.promise().value);
  }

 private:
  explicit route_coroutine_of(std::coroutine_handle<promise_type> step) : step_(step) {}
  std::coroutine_handle<promise_type> step_;
};

/// An actor's answer to an ask: its reply, or its error (a timeout included).
template <class Reply>
struct asked {
  std::optional<Reply> reply;
  caf::error error;

  explicit operator bool() const { return reply.has_value(); }
  Reply& operator*() { return *reply; }
  Reply* operator->() { return &*reply; }
};

namespace detail {

/// The callback CAF calls with the reply's values: one, or a tuple's elements.
template <class Reply>
struct reply_sink {
  template <class Store>
  static auto make(Store store) {
    return [store](Reply& r) { store(std::move(r)); };
  }
};
template <class... Rs>
struct reply_sink<std::tuple<Rs...>> {
  template <class Store>
  static auto make(Store store) {
    return [store](Rs&... rs) { store(std::tuple<Rs...>{std::move(rs)...}); };
  }
};

}  // namespace detail

/// `co_await ask_within<Reply>(out, timeout, dest, xs...)`: the asked<Reply> of `dest`'s answer
/// to `xs...`; the coroutine goes on on one of the server's handler threads. Reply is the
/// reply's type, or std::tuple of its types when it has several.
template <class Reply, class Handle, class... Ts>
auto ask_within(const reply_to& out, caf::duration timeout, Handle dest, Ts... xs) {
  struct awaiter {
    caf::actor_system& sys;
    offload_function offload;
    caf::duration timeout;
    Handle dest;
    std::tuple<Ts...> message;
    asked<Reply> result;

    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> suspended) {
      // Nothing of this frame is touched after ask_then returns: the answer may resume the
      // coroutine on another thread before await_suspend has returned.
      auto resume = [suspended, offload = offload] {
        if (offload)
          offload([suspended] { suspended.resume(); });
        else
          suspended.resume();
      };
      auto* result_at = &result;
      auto on_reply = detail::reply_sink<Reply>::make([result_at, resume](Reply r) {
        result_at->reply.emplace(std::move(r));
        resume();
      });
      auto on_error = [result_at, resume](caf::error& e) {
        result_at->error = std::move(e);
        resume();
      };
      std::apply(
          [&](auto&... parts) { ask_then(sys, dest, timeout, on_reply, on_error, parts...); },
          message);
    }
    asked<Reply> await_resume() { return std::move(result); }
  };
  return awaiter{out.system(), out.offload(), timeout, std::move(dest), std::tuple<Ts...>{std::move(xs)...}, {}};
}

/// ask_within() with route_timeout.
template <class Reply, class Handle, class... Ts>
auto ask(const reply_to& out, Handle dest, Ts... xs) {
  return ask_within<Reply>(out, caf::duration{route_timeout}, std::move(dest), std::move(xs)...);
}

/// Answers with the reply as JSON, or with the error.
template <class Reply>
void json_or_error(const reply_to& out, asked<Reply>& reply) {
  if (reply)
    out.json(*reply);
  else
    out.error(reply.error);
}

}  // namespace det::runtime
