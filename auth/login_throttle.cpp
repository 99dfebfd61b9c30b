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

// Whether `failures_by` may take key `key`: it has it, or has room once the keys whose failures
// all left the window are dropped.
template <class Map>
bool room_for(Map& failures_by, const typename Map::key_type& key, clock::time_point now) {
  if (failures_by.size() < login_throttle::max_keys || failures_by.count(key)) return true;
  for (auto it = failures_by.begin(); it != failures_by.end();)
    it = now - it->second.back() >= login_throttle::window ? failures_by.erase(it) : std::next(it);
  return failures_by.size() < login_throttle::max_keys;
}

template <class Map>
void count_failure(Map& failures_by, const typename Map::key_type& key, clock::time_point now) {
  if (room_for(failures_by, key, now)) failures_by[key].push_back(now);
}

} // namespace

std::chrono::seconds login_throttle::wait(const std::string& address, const std::string& username,
                                          clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto user = wait_in(by_user_, {address, account_key(username)}, max_per_user, now);
  auto all = wait_in(by_address_, address, max_per_address, now);
  return std::max(user, all);
}

std::chrono::seconds login_throttle::account_wait(const std::string& address, const std::string& username,
                                                  clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  const auto account = account_key(username);
  if (auto it = known_.find({address, account}); it != known_.end()) {
    if (now - it->second < known_for) return std::chrono::seconds{0};
    known_.erase(it);
  }
  return wait_in(by_account_, account, max_per_account, now);
}

void login_throttle::failed(const std::string& address, const std::string& username, clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  const auto account = account_key(username);
  count_failure(by_user_, {address, account}, now);
  count_failure(by_address_, address, now);
  count_failure(by_account_, account, now);
}

void login_throttle::succeeded(const std::string& address, const std::string& username, clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  const auto key = std::make_pair(address, account_key(username));
  by_user_.erase(key);
  // Only a login proves an address; the oldest ones go first when there are too many.
  if (known_.size() >= max_keys && !known_.count(key))
    known_.erase(std::min_element(known_.begin(), known_.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; }));
  known_[key] = now;
}

} // namespace det::auth
