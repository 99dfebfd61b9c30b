#include "runtime/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
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
  // Everything the child needs is built before vfork: after it, a child of a
  // multithreaded process may only make async-signal-safe calls.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv{*e};
    auto eq = kv.find('=');
    if (eq != std::string::npos)
      merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto& [k, v] : env)
    merged[k] = v;
  std::vector<std::string> env_strings;
  for (auto& [k, v] : merged)
    env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& kv : env_strings)
    envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  int fds[6] = {-1, -1, -1, -1, -1, -1};  // stdout, stderr, exec status: read/write ends
  auto close_all = [&] {
    for (int& fd : fds)
      close_fd(fd);
  };
  if (::pipe2(fds, O_CLOEXEC) != 0 || ::pipe2(fds + 2, O_CLOEXEC) != 0 ||
      ::pipe2(fds + 4, O_CLOEXEC) != 0) {
    auto e = errno;
    close_all();
    throw std::runtime_error(std::string("cannot create pipes for a worker: ") + std::strerror(e));
  }
  int* out = fds;
  int* err = fds + 2;
  int* status = fds + 4;
  const pid_t parent = ::getpid();
  // vfork: the child borrows the agent's memory until execve instead of copying
  // its page tables, which made fork the agent's largest cost per trial run.
  // The child below makes only system calls and touches no shared state.
  pid_t pid = ::vfork();
  if (pid < 0) {
    auto e = errno;
    close_all();
    throw std::runtime_error(std::string("cannot start a worker process: ") + std::strerror(e));
  }
  if (pid == 0) {
    // Agents block SIGTERM for their own sigwait; the worker must receive it.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // A worker never outlives the agent thread that started it, even when the
    // agent is killed with SIGKILL.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127);
    ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execve(args[0], args.data(), envp.data());
    int e = errno;
    auto ignored = ::write(status[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  close_fd(out[1]);
  close_fd(err[1]);
  close_fd(status[1]);
  int exec_errno = 0;
  auto n = ::read(status[0], &exec_errno, sizeof exec_errno);
  close_fd(status[0]);
  if (n == sizeof exec_errno) {
    ::waitpid(pid, nullptr, 0);
    close_fd(out[0]);
    close_fd(err[0]);
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
