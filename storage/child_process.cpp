#include "storage/child_process.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "process/process_exit.hpp"
#include "process/process_spawn.hpp"

namespace det::storage {

namespace {

std::string errno_sentence(const std::string& what, int err) { return what + ": " + std::strerror(err) + "."; }

// A descriptor this function opened, closed when it returns: the child has its own copies by then.
class owned_fd {
public:
  owned_fd(const std::string& path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw std::runtime_error(errno_sentence("Could not open " + path, errno));
  }
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;
  ~owned_fd() { ::close(fd_); }
  int get() const { return fd_; }

private:
  int fd_;
};

}  // namespace

int run_process(const std::vector<std::string>& argv, const std::string& working_dir, const std::string& log_path) {
  const owned_fd log{log_path, O_WRONLY | O_CREAT | O_APPEND};
  const owned_fd null{"/dev/null", O_RDONLY};
  process::spawn_request request;
  request.argv = argv;
  request.working_dir = working_dir;
  request.stdin_fd = null.get();
  request.stdout_fd = log.get();
  request.stderr_fd = log.get();
  request.close_other_fds = true;
  const auto end = process::wait_for_exit(process::spawn(request));
  return end.signal != 0 ? 128 + end.signal : end.exit_code;
}

std::string find_executable(const std::string& name) {
  const char* env_path = std::getenv("PATH");
  std::stringstream dirs{std::string{env_path ? env_path : ""} + ":/usr/sbin:/sbin:/usr/bin:/bin"};
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace det::storage
