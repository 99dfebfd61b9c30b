#include "agent/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
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

std::shared_ptr<child_process> child_process::start(process::spawn_request request, line_handler on_line,
                                                    exit_handler on_exit) {
  int fds[4] = {-1, -1, -1, -1};  // stdout, stderr: read/write ends
  auto close_all = [&] {
    for (int& fd : fds)
      close_fd(fd);
  };
  if (::pipe2(fds, O_CLOEXEC) != 0 || ::pipe2(fds + 2, O_CLOEXEC) != 0) {
    auto e = errno;
    close_all();
    throw std::runtime_error(std::string("cannot create pipes for a worker: ") + std::strerror(e));
  }
  int* out = fds;
  int* err = fds + 2;
  request.stdout_fd = out[1];
  request.stderr_fd = err[1];
  request.new_process_group = true;
  // A worker never outlives the agent thread that started it, even when the agent is killed
  // with SIGKILL.
  request.dies_with_parent = true;
  pid_t pid = -1;
  try {
    pid = process::spawn(request);
  } catch (...) {
    close_all();
    throw;
  }
  close_fd(out[1]);
  close_fd(err[1]);
  std::thread([pid, out_fd = out[0], err_fd = err[0], on_line = std::move(on_line),
               on_exit = std::move(on_exit)] {
    pump(out_fd, err_fd, on_line);
    process::process_exit e;
    try {
      e = process::wait_for_exit(pid);
    } catch (const std::exception&) {
      e.exit_code = -1;  // no status to report, and no success either
    }
    on_exit(e);
  }).detach();
  return std::shared_ptr<child_process>(new child_process(pid));
}

void child_process::signal(int sig) const {
  ::kill(-pid_, sig);
}

} // namespace det::runtime
