#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/slow_work_pool.hpp"

namespace {

// A gate jobs wait at until the test opens it.
struct gate {
  std::mutex mutex;
  std::condition_variable opened_cv;
  bool opened = false;
  void wait() {
    std::unique_lock lock(mutex);
    opened_cv.wait(lock, [&] { return opened; });
  }
  void open() {
    {
      std::lock_guard lock(mutex);
      opened = true;
    }
    opened_cv.notify_all();
  }
};

bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

} // namespace

TEST_CASE("slow work runs on at most its threads, in the order it came, and a job that throws ends alone") {
  auto held = std::make_shared<gate>();
  auto running = std::make_shared<std::atomic<int>>(0);
  auto most = std::make_shared<std::atomic<int>>(0);
  auto order = std::make_shared<std::vector<int>>();
  auto order_mutex = std::make_shared<std::mutex>();
  det::agent::slow_work_pool pool(2);
  pool.post([] { throw std::runtime_error("a failed pull"); });
  for (int i = 0; i < 6; ++i)
    pool.post([=] {
      const int now = ++*running;
      for (int m = most->load(); now > m && !most->compare_exchange_weak(m, now);) {}
      {
        std::lock_guard lock(*order_mutex);
        order->push_back(i);
      }
      held->wait();
      --*running;
    });
  REQUIRE(eventually([&] { return running->load() == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(most->load() == 2);  // the others wait for a thread
  held->open();
  REQUIRE(eventually([&] {
    std::lock_guard lock(*order_mutex);
    return order->size() == 6 && running->load() == 0;
  }));
  CHECK(order->front() < 2);  // the first two began first
}

TEST_CASE("a pool dropped while a job runs does not wait for it, and drops the jobs not begun") {
  auto held = std::make_shared<gate>();
  auto begun = std::make_shared<std::atomic<int>>(0);
  {
    det::agent::slow_work_pool pool(1);
    pool.post([=] {
      ++*begun;
      held->wait();  // a pull that takes its time
    });
    pool.post([=] { ++*begun; });
    REQUIRE(eventually([&] { return begun->load() == 1; }));
  }  // returns at once
  held->open();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(begun->load() == 1);
}
