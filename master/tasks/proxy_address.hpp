#pragma once
// Where task services are served: the proxy listener's own origin, apart from the web UI's, so that
// a task's pages share no cookie or storage with the UI (issue 35). With proxy_host ("*.SUFFIX")
// each task has a host of its own, ID.SUFFIX, and tasks do not share an origin with each other;
// without it every task is on the master's host at proxy_port.

#include <atomic>
#include <string>

#include "master/http/transport.hpp"

namespace det::runtime {

class proxy_address {
 public:
  /// `host_pattern` is master.toml's proxy_host ("*.SUFFIX") or "".
  proxy_address(transport scheme, std::string host_pattern);

  /// The port the proxy listener bound (set once, before either listener serves).
  void set_port(int port) { port_ = port; }
  int port() const { return port_; }

  /// "SCHEME://HOST:PORT" of task `task_id`'s service, HOST being ID.SUFFIX with proxy_host, else
  /// the host of `request_host` (the Host header the client reached the master with); "" when
  /// that header holds no usable host name.
  std::string origin_of(const std::string& task_id, const std::string& request_host) const;
  /// As origin_of(), with "{task_id}" for the task's id: GET /api/v1/master's proxy_url.
  std::string base_url(const std::string& request_host) const;
  /// Whether `host_header` (a request to the proxy listener) names task `task_id`'s own host:
  /// always true without proxy_host.
  bool is_own_host(const std::string& task_id, const std::string& host_header) const;

 private:
  transport scheme_;
  std::string suffix_;  // proxy_host without its "*", starting with '.'; "" without proxy_host
  std::atomic<int> port_{0};
};

/// The host of a Host header ("h:8080" → "h", "[::1]:8080" → "[::1]"), or "" when it holds other
/// characters than a host name or address may.
std::string host_of(const std::string& host_header);

} // namespace det::runtime
