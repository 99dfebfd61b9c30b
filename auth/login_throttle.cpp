#include "auth/login_throttle.hpp"

#include <algorithm>

namespace det::auth {
namespace {

using clock = login_throttle::clock;

// The wait that the failures under `key` impose. Failures that left the window are dropped, and
// the key with them once it has none, so that only addresses failing now take memory.
template <class Map>
std::chrono::seconds wait_in(Map& failures_by, const typename Map::key_type& key, std::size_t most, clock::time_point now) {
  auto it = failures_by.find(key);
  if (it == failures_by.end())
    return std::chrono::seconds{0};
  auto& failures = it->second;
  while (!failures.empty() && now - failures.front() >= login_throttle::window)
    failures.pop_front();
  if (failures.size() < most) {
    if (failures.empty())
      failures_by.erase(it);
    return std::chrono::seconds{0};
  }
  // Until the oldest failure that counts leaves the window, rounded up to a whole second.
  auto left = failures[failures.size() - most] + login_throttle::window - now;
  return std::chrono::ceil<std::chrono::seconds>(left);
}

// The name a failure is counted under. User names have at most 64 characters: any longer one
// names no account, and keeping it whole would let failures of huge names take memory.
std::string account_key(const std::string& username) { return username.substr(0, 65); }

// Drops every key of `failures_by` once it holds 100000: an address or name that failed and never
// came back is forgotten with the others rather than kept for ever.
template <class Map>
void bound(Map& failures_by) {
  if (failures_by.size() >= 100000) failures_by.clear();
}

} // namespace

std::chrono::seconds login_throttle::wait(const std::string& address, const std::string& username,
                                          clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto user = wait_in(by_user_, {address, account_key(username)}, max_per_user, now);
  auto all = wait_in(by_address_, address, max_per_address, now);
  return std::max(user, all);
}

std::chrono::seconds login_throttle::account_wait(const std::string& username, clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  return wait_in(by_account_, account_key(username), max_per_account, now);
}

void login_throttle::failed(const std::string& address, const std::string& username, clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  bound(by_user_);
  bound(by_address_);
  bound(by_account_);
  const auto account = account_key(username);
  by_user_[{address, account}].push_back(now);
  by_address_[address].push_back(now);
  by_account_[account].push_back(now);
}

void login_throttle::succeeded(const std::string& address, const std::string& username) {
  std::lock_guard<std::mutex> lock{mutex_};
  by_user_.erase({address, account_key(username)});
}

} // namespace det::auth
