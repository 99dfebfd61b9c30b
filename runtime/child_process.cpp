#include "runtime/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace det::runtime {
namespace {

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

// Drains both pipes, splitting on newlines, until the child closes them.
void pump(int out_fd, int err_fd, const child_process::line_handler& on_line) {
  struct stream {
    int fd;
    const char* name;
    std::string partial;
  } streams[2] = {{out_fd, "stdout", {}}, {err_fd, "stderr", {}}};
  char buf[8192];
  int open = 2;
  while (open > 0) {
    pollfd fds[2];
    for (int i = 0; i < 2; ++i)
      fds[i] = {streams[i].fd, POLLIN, 0};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (streams[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      auto n = ::read(streams[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (!streams[i].partial.empty())
          on_line(streams[i].name, std::move(streams[i].partial));
        close_fd(streams[i].fd);
        --open;
        continue;
      }
      auto& partial = streams[i].partial;
      partial.append(buf, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (auto nl = partial.find('\n'); nl != std::string::npos; nl = partial.find('\n', start)) {
        on_line(streams[i].name, partial.substr(start, nl - start));
        start = nl + 1;
      }
      partial.erase(0, start);
    }
  }
}

} // namespace

std::shared_ptr<child_process> child_process::start(const std::vector<std::string>& argv,
                                                    const std::map<std::string, std::string>& env,
                                                    line_handler on_line, exit_handler on_exit) {
  int out[2], err[2], status[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(status, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot create pipes for a worker: ") +
                             std::strerror(errno));
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("cannot fork a worker: ") + std::strerror(errno));
  if (pid == 0) {
    // Agents block SIGTERM for their own sigwait; the worker must receive it.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    for (auto& [k, v] : env)
      ::setenv(k.c_str(), v.c_str(), 1);
    ::execv(args[0], args.data());
    int e = errno;
    auto ignored = ::write(status[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::close(status[1]);
  int exec_errno = 0;
  auto n = ::read(status[0], &exec_errno, sizeof exec_errno);
  ::close(status[0]);
  if (n == sizeof exec_errno) {
    ::waitpid(pid, nullptr, 0);
    ::close(out[0]);
    ::close(err[0]);
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(exec_errno));
  }
  std::thread([pid, out_fd = out[0], err_fd = err[0], on_line = std::move(on_line),
               on_exit = std::move(on_exit)] {
    pump(out_fd, err_fd, on_line);
    int wstatus = 0;
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    child_exit e;
    if (WIFSIGNALED(wstatus))
      e.signal = WTERMSIG(wstatus);
    else
      e.exit_code = WEXITSTATUS(wstatus);
    on_exit(e);
  }).detach();
  return std::shared_ptr<child_process>(new child_process(pid));
}

void child_process::signal(int sig) const {
  ::kill(-pid_, sig);
}

std::string describe(const child_exit& e) {
  if (e.signal != 0) {
    const char* name = ::sigabbrev_np(e.signal);
    return "was killed by signal " + std::to_string(e.signal) +
           (name ? " (SIG" + std::string(name) + ")" : "");
  }
  return "exited with code " + std::to_string(e.exit_code);
}

} // namespace det::runtime
