#include "storage/child_process.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace det::storage {

namespace {

std::string errno_sentence(const std::string& what, int err) { return what + ": " + std::strerror(err) + "."; }

}  // namespace

int run_process(const std::vector<std::string>& argv, const std::string& working_dir, const std::string& log_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error(errno_sentence("Could not open " + log_path, errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    const int err = errno;
    ::close(log_fd);
    throw std::runtime_error(errno_sentence("Could not open /dev/null", err));
  }
  // Computed before fork: only async-signal-safe calls are allowed in the child of a threaded process.
  rlimit files{};
  const int max_fd = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536 ? int(files.rlim_cur) : 65536;

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(log_fd);
    ::close(null_fd);
    throw std::runtime_error(errno_sentence("Could not start " + argv.at(0), err));
  }
  if (pid == 0) {
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (::close_range(3, ~0U, 0) != 0)
      for (int fd = 3; fd < max_fd; ++fd) ::close(fd);
    sigset_t all;
    ::sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    if (::chdir(working_dir.c_str()) == 0) ::execv(args[0], args.data());
    static const char failed[] = "could not change directory or execute: ";
    (void)!::write(2, failed, sizeof failed - 1);
    (void)!::write(2, args[0], std::strlen(args[0]));
    (void)!::write(2, "\n", 1);
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(errno_sentence("Could not wait for " + argv.at(0), errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
