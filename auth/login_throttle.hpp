#pragma once
// Failed logins slow down whoever makes them: each costs the master an Argon2id hash (about
// 120 ms and 64 MiB), and a password is guessed by trying many. At most 5 failures a minute for
// one user from one address, and 30 from one address for all users; then that address waits.
// At most 20 failures a minute for one user from all addresses together; then every address
// waits to try that user, so that guesses spread over many addresses are slowed as well, except
// an address that logged in as that user within 30 days: strangers' guesses cannot lock a user
// out of the machines they use. A success clears its user's count from its address.
// Each table is bounded: when one is full, entries whose window has passed go first, and while it
// is full of current ones new keys are not tracked (their guesses still cost an Argon2id hash),
// so a flood of new names or addresses cannot wipe out the counts of the accounts it attacks.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace det::auth {

class login_throttle {
public:
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t max_per_user = 5;
  static constexpr std::size_t max_per_address = 30;
  static constexpr std::size_t max_per_account = 20;
  static constexpr std::chrono::seconds window{60};
  static constexpr std::chrono::hours known_for{24 * 30};
  static constexpr std::size_t max_keys = 100000;

  /// How long `address` must wait before it may try to log in as `username` again because of its
  /// own failures; 0 if now.
  std::chrono::seconds wait(const std::string& address, const std::string& username, clock::time_point now);
  /// How long `address` must wait before it may try to log in as `username` again because of
  /// the failures of all addresses together; 0 if now, and always 0 for an address that logged in
  /// as `username` within known_for.
  std::chrono::seconds account_wait(const std::string& address, const std::string& username, clock::time_point now);
  void failed(const std::string& address, const std::string& username, clock::time_point now);
  void succeeded(const std::string& address, const std::string& username, clock::time_point now);

private:
  std::mutex mutex_;
  // The failures in the window, oldest first.
  std::map<std::pair<std::string, std::string>, std::deque<clock::time_point>> by_user_;
  std::map<std::string, std::deque<clock::time_point>> by_address_;
  std::map<std::string, std::deque<clock::time_point>> by_account_;
  // When each address last logged in as each user.
  std::map<std::pair<std::string, std::string>, clock::time_point> known_;
};

} // namespace det::auth
