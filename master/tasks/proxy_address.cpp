#include "master/tasks/proxy_address.hpp"

#include <algorithm>
#include <cctype>

namespace det::runtime {

std::string host_of(const std::string& host_header) {
  std::string host = host_header;
  if (!host.empty() && host.front() == '[') {
    const auto end = host.find(']');
    if (end == std::string::npos) return "";
    host = host.substr(0, end + 1);
    if (host.find_first_not_of("[]0123456789abcdefABCDEF:.") != std::string::npos) return "";
    return host;
  }
  host = host.substr(0, host.find(':'));
  if (host.empty() || host.size() > 253 ||
      host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != std::string::npos)
    return "";
  return host;
}

proxy_address::proxy_address(transport scheme, std::string host_pattern)
    : scheme_(scheme), suffix_(host_pattern.empty() ? std::string{} : host_pattern.substr(1)) {}

std::string proxy_address::origin_of(const std::string& task_id, const std::string& request_host) const {
  const auto host = suffix_.empty() ? host_of(request_host) : task_id + suffix_;
  if (host.empty()) return "";
  return scheme_of(scheme_) + "://" + host + ":" + std::to_string(port_.load());
}

std::string proxy_address::base_url(const std::string& request_host) const {
  return origin_of("{task_id}", request_host);
}

bool proxy_address::is_own_host(const std::string& task_id, const std::string& host_header) const {
  if (suffix_.empty()) return true;
  auto host = host_of(host_header);
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  auto own = task_id + suffix_;
  std::transform(own.begin(), own.end(), own.begin(), [](unsigned char c) { return std::tolower(c); });
  return host == own;
}

} // namespace det::runtime
