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

} // namespace

std::chrono::seconds login_throttle::wait(const std::string& address, const std::string& username,
                                          clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto user = wait_in(by_user_, {address, username}, max_per_user, now);
  auto all = wait_in(by_address_, address, max_per_address, now);
  return std::max(user, all);
}

void login_throttle::failed(const std::string& address, const std::string& username, clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  // Bounded: an address that failed and never came back is forgotten with every other once
  // 100000 are kept, rather than kept for ever.
  if (by_user_.size() >= 100000) by_user_.clear();
  if (by_address_.size() >= 100000) by_address_.clear();
  by_user_[{address, username}].push_back(now);
  by_address_[address].push_back(now);
}

void login_throttle::succeeded(const std::string& address, const std::string& username) {
  std::lock_guard<std::mutex> lock{mutex_};
  by_user_.erase({address, username});
}

} // namespace det::auth
