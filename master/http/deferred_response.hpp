#pragma once
// A response that its route finishes after the route has returned: with an actor's answer, which
// arrives on one of CAF's threads. The route's handler thread goes back to the pool at once, and
// the connection waits for the answer without holding any thread (master/http/http_server.cpp).

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace det::runtime {

struct http_response;

/// Runs a piece of work on the HTTP server's handler threads (where CPU-heavy answers are made:
/// the JSON of a large page). Empty: the work runs on the calling thread.
using offload_function = std::function<void(std::function<void()>)>;

/// A 500 whose sentence says the master failed to answer, and `why`.
http_response answer_failed(const std::string& why);

class deferred_response : public std::enable_shared_from_this<deferred_response> {
 public:
  using on_finished = std::function<void(const http_response&)>;

  explicit deferred_response(offload_function offload);
  /// A response that nothing finished (its route's continuation was dropped, the actor system
  /// stopping) is finished with a 500, so that no client waits for ever.
  ~deferred_response();
  deferred_response(const deferred_response&) = delete;
  deferred_response& operator=(const deferred_response&) = delete;

  /// The answer; only the first of several calls counts. Callable from any thread.
  void finish(http_response res);
  /// The answer, made by `make` on a handler thread: for answers that cost CPU.
  void finish_with(std::function<void(http_response&)> make);
  /// Calls `f` with the answer once there is one: at once when there is, else on the thread that
  /// finishes it. Callbacks run in the order they were given.
  void when_finished(on_finished f);

 private:
  void deliver(const http_response& res, std::vector<on_finished> callbacks);

  offload_function offload_;
  std::mutex mutex_;
  std::shared_ptr<const http_response> answer_;
  std::vector<on_finished> waiting_;
};

} // namespace det::runtime
