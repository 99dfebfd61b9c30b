#include "agent/service_probe.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace det::runtime {
namespace {

// Closes the descriptor when it goes out of scope.
struct socket_fd {
  int fd;
  explicit socket_fd(int f) : fd(f) {}
  ~socket_fd() {
    if (fd >= 0) ::close(fd);
  }
  socket_fd(socket_fd&& other) noexcept : fd(other.fd) { other.fd = -1; }
  socket_fd(const socket_fd&) = delete;
  socket_fd& operator=(const socket_fd&) = delete;
};

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

}  // namespace

int free_port() {
  socket_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  socklen_t len = sizeof addr;
  if (s.fd < 0 || ::bind(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(s.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error(std::string("cannot find a free port for the task's service: ") + std::strerror(errno));
  return ntohs(addr.sin_port);
}

namespace {

// Connected to 127.0.0.1:`port` and, unless `path` is empty, with an HTTP/1.0 GET of it sent;
// fd -1 when either fails.
socket_fd requested(int port, const std::string& path) {
  socket_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto addr = loopback(port);
  if (s.fd < 0 || ::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return socket_fd(-1);
  if (path.empty()) return s;
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n";
  if (::send(s.fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return socket_fd(-1);
  return s;
}

bool readable_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

}  // namespace

bool service_answers(int port, const std::string& http_path) {
  auto s = requested(port, http_path);
  if (s.fd < 0) return false;
  if (http_path.empty()) return true;
  char head[8] = {};
  return readable_within(s.fd, 2000) && ::recv(s.fd, head, 5, MSG_WAITALL) == 5 && std::memcmp(head, "HTTP/", 5) == 0;
}

std::optional<std::string> http_get(int port, const std::string& path) {
  auto s = requested(port, path);
  if (s.fd < 0) return std::nullopt;
  std::string response;
  char chunk[16384];
  for (;;) {
    if (!readable_within(s.fd, 5000)) return std::nullopt;
    const auto n = ::recv(s.fd, chunk, sizeof chunk, 0);
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    response.append(chunk, static_cast<std::size_t>(n));
  }
  const auto end_of_head = response.find("\r\n\r\n");
  if (response.compare(0, 12, "HTTP/1.1 200") != 0 && response.compare(0, 12, "HTTP/1.0 200") != 0) return std::nullopt;
  if (end_of_head == std::string::npos) return std::nullopt;
  return response.substr(end_of_head + 4);
}

std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) return "127.0.0.1";
  // A UDP "connection" sends nothing; it only makes the kernel pick the route and source address.
  socket_fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in local{};
  socklen_t len = sizeof local;
  const bool ok = s.fd >= 0 && ::connect(s.fd, found->ai_addr, found->ai_addrlen) == 0 &&
                  ::getsockname(s.fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  ::freeaddrinfo(found);
  char text[INET_ADDRSTRLEN] = {};
  if (!ok || !::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text)) return "127.0.0.1";
  return text;
}

} // namespace det::runtime
