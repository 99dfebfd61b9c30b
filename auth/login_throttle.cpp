#include "auth/login_throttle.hpp"

#include <algorithm>

namespace det::auth {

std::chrono::seconds login_throttle::wait_for(std::deque<clock::time_point>& failures, std::size_t most,
                                              clock::time_point now) {
  while (!failures.empty() && now - failures.front() >= window)
    failures.pop_front();
  if (failures.size() < most)
    return std::chrono::seconds{0};
  // Until the oldest failure that counts leaves the window, rounded up to a whole second.
  auto left = failures[failures.size() - most] + window - now;
  return std::chrono::ceil<std::chrono::seconds>(left);
}

std::chrono::seconds login_throttle::wait(const std::string& address, const std::string& username,
                                          clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto user = wait_for(by_user_[{address, username}], max_per_user, now);
  auto all = wait_for(by_address_[address], max_per_address, now);
  return std::max(user, all);
}

void login_throttle::failed(const std::string& address, const std::string& username, clock::time_point now) {
  std::lock_guard<std::mutex> lock{mutex_};
  by_user_[{address, username}].push_back(now);
  by_address_[address].push_back(now);
  // Bounded: addresses and names that stopped failing are forgotten as they are met again;
  // a flood of new ones is cleared wholesale rather than kept.
  if (by_user_.size() > 100000) by_user_.clear();
  if (by_address_.size() > 100000) by_address_.clear();
}

void login_throttle::succeeded(const std::string& address, const std::string& username) {
  std::lock_guard<std::mutex> lock{mutex_};
  by_user_.erase({address, username});
}

} // namespace det::auth
