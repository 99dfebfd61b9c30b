#include "process/captured_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "process/process_spawn.hpp"

namespace det::process {

namespace {

struct pipe_pair {
  int read = -1, write = -1;
  pipe_pair() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    read = fds[0];
    write = fds[1];
  }
  ~pipe_pair() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  void close_write() {
    ::close(write);
    write = -1;
  }
};

// The last few non-empty lines of a command's output: enough to say why it failed.
std::string tail_lines(const std::string& text, size_t lines) {
  std::vector<std::string> kept;
  size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.find_first_not_of(" \t\r", at) < end) kept.push_back(text.substr(at, end - at));
    if (kept.size() > lines) kept.erase(kept.begin());
    at = end + 1;
  }
  std::string out;
  for (const auto& line : kept) out += (out.empty() ? "" : "\n") + line;
  return out;
}

}  // namespace

std::string captured_output::failure() const {
  std::string what = timed_out ? "ran out of time" : describe(end);
  auto reason = tail_lines(err.empty() ? out : err, 5);
  return reason.empty() ? what : what + ": " + reason;
}

const std::string& captured_output::output_of(const std::string& what) const {
  if (!succeeded()) throw std::runtime_error(what + " " + failure());
  return out;
}

captured_output run_captured(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                             std::chrono::milliseconds limit) {
  pipe_pair out, err;
  int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  spawn_request request;
  request.argv = argv;
  request.search_path = true;
  request.env = env;
  request.stdin_fd = null_in;
  request.stdout_fd = out.write;
  request.stderr_fd = err.write;
  request.new_process_group = true;
  pid_t pid = -1;
  try {
    pid = spawn(request);
  } catch (...) {
    ::close(null_in);
    throw;
  }
  ::close(null_in);
  out.close_write();
  err.close_write();
  captured_output result;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::array<pollfd, 2> fds{{{out.read, POLLIN, 0}, {err.read, POLLIN, 0}}};
  std::array<std::string*, 2> into{&result.out, &result.err};
  int open_streams = 2;
  char buffer[4096];
  while (open_streams > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        into[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll skips negative descriptors
        --open_streams;
      }
    }
  }
  result.end = wait_for_exit(pid);
  // What it started in the background (a launch that leaves an agent running) keeps its own
  // process group only if it asked for one; a timed-out command's group was killed above.
  return result;
}

captured_output run_shell(const std::string& line, const std::map<std::string, std::string>& env,
                          std::chrono::milliseconds limit) {
  return run_captured({"/bin/sh", "-c", line}, env, limit);
}

}  // namespace det::process
