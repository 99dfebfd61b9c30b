#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "master/http/read_coalescer.hpp"

using det::runtime::deferred_response;
using det::runtime::http_response;
using det::runtime::read_coalescer;

namespace {

/// What a deferred response was finished with: its status and body, or nullopt while unfinished.
struct answered {
  std::shared_ptr<std::optional<http_response>> got = std::make_shared<std::optional<http_response>>();
  explicit answered(http_response& res) {
    REQUIRE(static_cast<bool>(res.deferred));
    res.deferred->when_finished([got = got](const http_response& r) { *got = r; });
  }
  bool done() const { return got->has_value(); }
  std::string body() const { return done() ? (*got)->body : "(unanswered)"; }
  int status() const { return done() ? (*got)->status : 0; }
};

/// Reads that answer later, as an actor does: each defers its response and is finished by the test.
struct deferred_reads {
  std::vector<std::shared_ptr<deferred_response>> under_way;
  int runs = 0;
  read_coalescer::read read() {
    return [this](http_response& res) {
      ++runs;
      under_way.push_back(res.defer());
    };
  }
  void finish(std::size_t index, const std::string& body) {
    http_response res;
    res.set_content(body, "text/plain");
    under_way.at(index)->finish(std::move(res));
  }
};

}  // namespace

TEST_CASE("requests that arrive during a read get the next read's answer, made once for all of them") {
  read_coalescer coalescer;
  deferred_reads reads;
  http_response first;
  coalescer.answer("/api/v1/experiments", first, reads.read());
  answered first_answer{first};
  // The first read is under way: the requests below arrived after it began, so none of them may
  // take its answer.
  std::vector<http_response> later(8);
  std::vector<answered> later_answers;
  for (auto& res : later) {
    coalescer.answer("/api/v1/experiments", res, reads.read());
    later_answers.emplace_back(res);
  }
  CHECK(reads.runs == 1);
  CHECK(coalescer.waiting("/api/v1/experiments") == 9);
  reads.finish(0, "1");
  CHECK(first_answer.body() == "1");
  for (const auto& a : later_answers) CHECK_FALSE(a.done());
  CHECK(reads.runs == 2);  // the second read, for the eight, started when the first was done
  CHECK(coalescer.waiting("/api/v1/experiments") == 8);
  reads.finish(1, "2");
  for (const auto& a : later_answers) CHECK(a.body() == "2");
  CHECK(reads.runs == 2);
  CHECK(coalescer.waiting("/api/v1/experiments") == 0);
}

TEST_CASE("different keys never share an answer") {
  read_coalescer coalescer;
  int runs = 0;
  http_response a, b;
  coalescer.answer("/a", a, [&](http_response& r) { r.body = "a" + std::to_string(++runs); });
  coalescer.answer("/b", b, [&](http_response& r) { r.body = "b" + std::to_string(++runs); });
  CHECK(answered{a}.body() == "a1");
  CHECK(answered{b}.body() == "b2");
  http_response again;
  coalescer.answer("/a", again, [&](http_response& r) { r.body = "a" + std::to_string(++runs); });
  CHECK(answered{again}.body() == "a3");  // a finished answer is never served to a later request
}

TEST_CASE("a read that throws is answered with a 500 and leaves the key usable") {
  read_coalescer coalescer;
  http_response res;
  coalescer.answer("/x", res, [](http_response&) { throw std::runtime_error("down"); });
  answered failed{res};
  CHECK(failed.status() == 500);
  CHECK(failed.body().find("down") != std::string::npos);
  http_response again;
  coalescer.answer("/x", again, [](http_response& r) { r.body = "up"; });
  CHECK(answered{again}.body() == "up");
}

TEST_CASE("a deferred response that nothing finishes answers 500 when its last holder lets go") {
  http_response res;
  auto later = res.defer();
  answered a{res};
  res.deferred.reset();
  CHECK_FALSE(a.done());
  later.reset();  // the continuation dropped without an answer
  CHECK(a.status() == 500);
}

TEST_CASE("a deferred response is finished once, and makes a costly answer with its offload") {
  std::vector<std::function<void()>> handler_pool;
  http_response res;
  res.offload = [&](std::function<void()> work) { handler_pool.push_back(std::move(work)); };
  auto later = res.defer();
  answered a{res};
  later->finish_with([](http_response& made) { made.body = "made on a handler thread"; });
  CHECK_FALSE(a.done());  // not on the finishing thread: on the pool
  REQUIRE(handler_pool.size() == 1);
  handler_pool.front()();
  CHECK(a.body() == "made on a handler thread");
  http_response second;
  second.body = "too late";
  later->finish(std::move(second));
  CHECK(a.body() == "made on a handler thread");
}
