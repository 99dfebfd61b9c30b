#include <doctest/doctest.h>

#include "auth/login_throttle.hpp"

using det::auth::login_throttle;
using namespace std::chrono_literals;

TEST_CASE("five failed logins a minute make that user's address wait; others and successes are unaffected") {
  login_throttle t;
  const auto start = login_throttle::clock::now();
  for (int i = 0; i < 5; ++i) {
    CHECK(t.wait("10.0.0.1", "alice", start + i * 1s) == 0s);
    t.failed("10.0.0.1", "alice", start + i * 1s);
  }
  CHECK(t.wait("10.0.0.1", "alice", start + 5s) == 55s);  // until the first failure is a minute old
  CHECK(t.wait("10.0.0.2", "alice", start + 5s) == 0s);   // another address
  CHECK(t.wait("10.0.0.1", "bob", start + 5s) == 0s);     // another user
  CHECK(t.wait("10.0.0.1", "alice", start + 60s) == 0s);  // the window moved on
  for (int i = 0; i < 5; ++i) t.failed("10.0.0.1", "bob", start + 61s);
  CHECK(t.wait("10.0.0.1", "bob", start + 61s) == 60s);
  t.succeeded("10.0.0.1", "bob");  // a success clears the user's count
  CHECK(t.wait("10.0.0.1", "bob", start + 61s) == 0s);
}

TEST_CASE("thirty failures a minute from one address make it wait for every user") {
  login_throttle t;
  const auto start = login_throttle::clock::now();
  for (int i = 0; i < 30; ++i) t.failed("10.0.0.9", "user" + std::to_string(i % 10), start);
  CHECK(t.wait("10.0.0.9", "someone-new", start + 1s) == 59s);
  CHECK(t.wait("10.0.0.8", "someone-new", start + 1s) == 0s);
}
