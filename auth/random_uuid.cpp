#include "auth/random_uuid.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>

namespace det::auth {

// From the kernel's random source directly (getrandom(2)), not libuuid: the worker's harness,
// which is built on GPU nodes that lack libuuid's headers, names its checkpoints with it.
std::string random_uuid() {
  unsigned char b[16];
  std::size_t got = 0;
  while (got < sizeof b) {
    const ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("The system's random source (getrandom) failed: no UUID can be made.");
    got += static_cast<std::size_t>(n);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4: random
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // the RFC 4122 variant
  char text[37];
  std::snprintf(text, sizeof text, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

}  // namespace det::auth
