#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/read_coalescer.hpp"

using det::runtime::http_response;
using det::runtime::read_coalescer;

namespace {

/// A read that blocks until released and answers with how many reads ran before it.
struct gated_read {
  std::mutex mutex;
  std::condition_variable changed;
  int runs = 0;
  bool open = false;

  void operator()(http_response& res) {
    std::unique_lock lock{mutex};
    const int run = ++runs;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
    res.set_content(std::to_string(run), "text/plain");
  }
  void wait_for_runs(int n) {
    std::unique_lock lock{mutex};
    changed.wait(lock, [&] { return runs >= n; });
  }
  void release() {
    std::lock_guard lock{mutex};
    open = true;
    changed.notify_all();
  }
};

}  // namespace

TEST_CASE("requests that arrive during a read get the next read's answer, made once for all of them") {
  read_coalescer coalescer;
  gated_read read;
  auto ask = [&](std::string& out) {
    http_response res;
    coalescer.answer("/api/v1/experiments", res, [&](http_response& r) { read(r); });
    out = res.body;
  };
  std::string first;
  std::thread early{ask, std::ref(first)};
  read.wait_for_runs(1);  // the first read is under way: the requests below arrived after it began
  std::vector<std::string> later(8);
  std::vector<std::thread> threads;
  for (auto& out : later) threads.emplace_back(ask, std::ref(out));
  // Every later request waits on the first run (none of them may take its answer), so a second
  // run starts only when the first is done.
  while (coalescer.waiting("/api/v1/experiments") < 9) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  read.release();
  early.join();
  for (auto& t : threads) t.join();
  CHECK(first == "1");
  for (const auto& out : later) CHECK(out == "2");
  CHECK(read.runs == 2);
  CHECK(coalescer.waiting("/api/v1/experiments") == 0);
}

TEST_CASE("different keys never share an answer") {
  read_coalescer coalescer;
  int runs = 0;
  http_response a, b;
  coalescer.answer("/a", a, [&](http_response& r) { r.body = "a" + std::to_string(++runs); });
  coalescer.answer("/b", b, [&](http_response& r) { r.body = "b" + std::to_string(++runs); });
  CHECK(a.body == "a1");
  CHECK(b.body == "b2");
  http_response again;
  coalescer.answer("/a", again, [&](http_response& r) { r.body = "a" + std::to_string(++runs); });
  CHECK(again.body == "a3");  // a finished answer is never served to a later request
}

TEST_CASE("a read that throws leaves the key usable") {
  read_coalescer coalescer;
  http_response res;
  CHECK_THROWS_AS(coalescer.answer("/x", res, [](http_response&) { throw std::runtime_error("down"); }),
                  std::runtime_error);
  coalescer.answer("/x", res, [](http_response& r) { r.body = "up"; });
  CHECK(res.body == "up");
}
