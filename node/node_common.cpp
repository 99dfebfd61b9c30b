#include <csignal>
#include <cstdlib>
#include <limits.h>
#include <stdexcept>
#include <unistd.h>

#include "node/node.hpp"

#include "auth/private_file.hpp"

namespace det::runtime {
namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

} // namespace

void block_stop_signals() {
  auto set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_stop_signal() {
  auto set = stop_signals();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

std::pair<std::string, uint16_t> split_host_port(const std::string& text, const std::string& flag) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::runtime_error(flag + ": expected HOST:PORT, got \"" + text + "\"");
  int port = 0;
  try {
    port = std::stoi(text.substr(colon + 1));
  } catch (const std::exception&) {
    port = -1;
  }
  if (port <= 0 || port > 65535)
    throw std::runtime_error(flag + ": \"" + text.substr(colon + 1) + "\" is not a port number");
  return {text.substr(0, colon), static_cast<uint16_t>(port)};
}

std::string read_agent_token(const std::string& path) {
  if (!path.empty()) {
    if (auto token = auth::read_first_line(path))
      return *token;
    throw std::runtime_error("--agent-token-file: cannot read a token from " + path);
  }
  if (const char* env = std::getenv("DET_AGENT_TOKEN"); env && *env) {
    std::string token = env;
    // Out of this process's environment, so that no worker, task or container inherits it.
    ::unsetenv("DET_AGENT_TOKEN");
    return token;
  }
  throw std::runtime_error("an agent needs the master's agent token: pass --agent-token-file (the master writes it to "
                           "DATA_DIR/agent-token) or set DET_AGENT_TOKEN");
}

std::string hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string node_executable() {
  char buf[PATH_MAX];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    throw std::runtime_error("cannot find the det-node binary through /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string worker_executable() {
  auto self = node_executable();
  return self.substr(0, self.rfind('/') + 1) + "det-worker";
}

} // namespace det::runtime
