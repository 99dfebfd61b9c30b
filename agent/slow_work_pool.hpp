#pragma once
// Work the agent's actor must not wait for: pulling a task's image (up to 10 minutes), unpacking
// its uploaded context, removing a container left over. A few threads run it in the order it
// comes; each job reports back to the actor as a message, so kills, exits and logs of every other
// container are handled meanwhile.
//
// The threads are detached and share the queue with the pool: an agent that stops does not wait
// for a pull under way (the process ends without it), and jobs not yet begun are dropped.

#include <cstddef>
#include <functional>
#include <memory>

namespace det::agent {

class slow_work_pool {
 public:
  explicit slow_work_pool(std::size_t threads);
  ~slow_work_pool();
  slow_work_pool(const slow_work_pool&) = delete;
  slow_work_pool& operator=(const slow_work_pool&) = delete;

  /// Runs `job` on one of the threads once the jobs before it have begun. A job that throws ends
  /// with its exception dropped: jobs say how they went by the message they send.
  void post(std::function<void()> job);

 private:
  struct shared;
  static void work(const std::shared_ptr<shared>& s);
  std::shared_ptr<shared> shared_;
};

} // namespace det::agent
