// Where the master serves a task's service (master/tasks/proxy_address.hpp): the master's host at
// proxy_port, or a host per task with proxy_host, and which Host headers name a task's own host.

#include <doctest/doctest.h>

#include "master/tasks/proxy_address.hpp"

using det::runtime::host_of;
using det::runtime::proxy_address;
using det::runtime::transport;

namespace {
constexpr const char* task = "0b0e5c1e-1111-4a4a-9c9c-123456789abc";
}

TEST_CASE("a Host header's host keeps names and addresses and refuses anything else") {
  CHECK(host_of("master.example.com:8080") == "master.example.com");
  CHECK(host_of("127.0.0.1") == "127.0.0.1");
  CHECK(host_of("[::1]:8080") == "[::1]");
  CHECK(host_of("") == "");
  CHECK(host_of("evil.com/path") == "");
  CHECK(host_of("a b:80") == "");
  CHECK(host_of("[::1") == "");
}

TEST_CASE("without proxy_host every task is at the master's host on the proxy's port") {
  proxy_address at{transport::http, ""};
  at.set_port(9000);
  CHECK(at.origin_of(task, "master.example.com:8080") == "http://master.example.com:9000");
  CHECK(at.base_url("127.0.0.1:8080") == "http://127.0.0.1:9000");
  CHECK(at.origin_of(task, "bad host") == "");
  CHECK(at.is_own_host(task, "anything:9000"));
}

TEST_CASE("with proxy_host each task has a host of its own, and only that host serves it") {
  proxy_address at{transport::https, "*.proxy.example.com"};
  at.set_port(443);
  CHECK(at.origin_of(task, "master.example.com") == std::string("https://") + task + ".proxy.example.com:443");
  CHECK(at.base_url("master.example.com") == "https://{task_id}.proxy.example.com:443");
  CHECK(at.is_own_host(task, std::string(task) + ".proxy.example.com:443"));
  CHECK(at.is_own_host(task, std::string(task) + ".PROXY.example.com"));
  CHECK_FALSE(at.is_own_host(task, "other.proxy.example.com:443"));
  CHECK_FALSE(at.is_own_host(task, "master.example.com"));
}
