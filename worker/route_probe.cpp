// Finds the address this machine is reached at by the other workers of a run (route_probe.hpp).

#include "worker/route_probe.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace det::runtime {

// A UDP socket's connect sends nothing; it only picks the route, whose local end getsockname reads.
std::string peer_address(const std::string& master_host, uint16_t master_port) {
  if (const char* chosen = std::getenv("DET_PEER_ADDRESS"); chosen && *chosen) return chosen;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(master_host.c_str(), std::to_string(master_port).c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("cannot resolve the master's host " + master_host + ": " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in local{};
  socklen_t length = sizeof local;
  bool ok = ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  int error = errno;
  ::close(fd);
  if (!ok)
    throw std::runtime_error("cannot find this machine's address towards the master at " + master_host + ": " +
                             std::strerror(error));
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  return text;
}

} // namespace det::runtime
