#include "agent/slow_work_pool.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace det::agent {

struct slow_work_pool::shared {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> jobs;
  bool stopping = false;
};

slow_work_pool::slow_work_pool(std::size_t threads) : shared_(std::make_shared<shared>()) {
  for (std::size_t i = 0; i < (threads > 0 ? threads : 1); ++i)
    std::thread([s = shared_] { work(s); }).detach();
}

slow_work_pool::~slow_work_pool() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stopping = true;
    shared_->jobs.clear();
  }
  shared_->wake.notify_all();
}

void slow_work_pool::post(std::function<void()> job) {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->jobs.push_back(std::move(job));
  }
  shared_->wake.notify_one();
}

void slow_work_pool::work(const std::shared_ptr<shared>& s) {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock lock(s->mutex);
      s->wake.wait(lock, [&] { return s->stopping || !s->jobs.empty(); });
      if (s->stopping) return;
      job = std::move(s->jobs.front());
      s->jobs.pop_front();
    }
    try {
      job();
    } catch (...) {  // NOLINT(bugprone-empty-catch): see post()
    }
  }
}

} // namespace det::agent
