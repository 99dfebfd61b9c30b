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
  t.succeeded("10.0.0.1", "bob", start + 61s);  // a success clears the user's count
  CHECK(t.wait("10.0.0.1", "bob", start + 61s) == 0s);
}

TEST_CASE("thirty failures a minute from one address make it wait for every user") {
  login_throttle t;
  const auto start = login_throttle::clock::now();
  for (int i = 0; i < 30; ++i) t.failed("10.0.0.9", "user" + std::to_string(i % 10), start);
  CHECK(t.wait("10.0.0.9", "someone-new", start + 1s) == 59s);
  CHECK(t.wait("10.0.0.8", "someone-new", start + 1s) == 0s);
}

TEST_CASE("twenty failures a minute for one user from many addresses make every address wait for that user") {
  login_throttle t;
  const auto start = login_throttle::clock::now();
  // Four guesses from each of five addresses: under the per-address limits, not under the account's.
  for (int address = 0; address < 5; ++address)
    for (int i = 0; i < 4; ++i) {
      const auto from = "10.0.1." + std::to_string(address);
      CHECK(t.wait(from, "alice", start) == 0s);
      CHECK(t.account_wait(from, "alice", start) == 0s);
      t.failed(from, "alice", start);
    }
  CHECK(t.account_wait("10.0.9.9", "alice", start + 1s) == 59s);  // a new address too
  CHECK(t.wait("10.0.9.9", "alice", start + 1s) == 0s);           // its own failures are none
  CHECK(t.account_wait("10.0.9.9", "bob", start + 1s) == 0s);     // another user
  CHECK(t.account_wait("10.0.1.0", "alice", start + 60s) == 0s);  // the window moved on
}

TEST_CASE("strangers' guesses do not keep a user from the address it logs in from") {
  login_throttle t;
  const auto start = login_throttle::clock::now();
  t.succeeded("10.0.5.5", "alice", start);  // alice's own machine
  for (int i = 0; i < 20; ++i) t.failed("10.0.3." + std::to_string(i), "alice", start + 1s);
  CHECK(t.account_wait("10.0.3.99", "alice", start + 2s) == 59s);  // a stranger waits
  CHECK(t.account_wait("10.0.5.5", "alice", start + 2s) == 0s);    // alice does not
  CHECK(t.account_wait("10.0.5.5", "bob", start + 2s) == 0s);
  // Known for 30 days, not for ever.
  for (int i = 0; i < 20; ++i) t.failed("10.0.3." + std::to_string(i), "alice", start + 24h * 31);
  CHECK(t.account_wait("10.0.5.5", "alice", start + 24h * 31 + 1s) == 59s);
}

TEST_CASE("a flood of new names does not wipe out the count of the account it attacks") {
  login_throttle t;
  const auto start = login_throttle::clock::now();
  for (int i = 0; i < 20; ++i) t.failed("10.0.4." + std::to_string(i), "alice", start);
  for (std::size_t i = 0; i < login_throttle::max_keys + 10; ++i)
    t.failed("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250), "name" + std::to_string(i), start + 1s);
  CHECK(t.account_wait("10.0.9.9", "alice", start + 2s) == 58s);
  // Once their window has passed, the flood's keys make room again.
  for (int i = 0; i < 20; ++i) t.failed("10.0.6." + std::to_string(i), "carol", start + 62s);
  CHECK(t.account_wait("10.0.9.9", "carol", start + 62s) == 60s);
}

TEST_CASE("a name longer than any user's counts as one account however it ends") {
  login_throttle t;
  const auto start = login_throttle::clock::now();
  const std::string prefix(100, 'x');
  for (int i = 0; i < 20; ++i) t.failed("10.0.2." + std::to_string(i), prefix + std::to_string(i), start);
  CHECK(t.account_wait("10.0.2.99", prefix + "new", start) == 60s);
}
