#include "process/process_exit.hpp"

#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace det::process {

process_exit exit_from_wait_status(int status) {
  process_exit end;
  if (WIFSIGNALED(status))
    end.signal = WTERMSIG(status);
  else
    end.exit_code = WEXITSTATUS(status);
  return end;
}

process_exit wait_for_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw std::runtime_error("cannot wait for process " + std::to_string(pid) + ": " + std::strerror(errno));
  return exit_from_wait_status(status);
}

std::string signal_name(int signal) {
  // sigabbrev_np (glibc 2.32) knows the names without the SIG prefix, and returns null for a
  // number it does not know.
  const char* abbreviation = ::sigabbrev_np(signal);
  return abbreviation ? "SIG" + std::string(abbreviation) : std::string();
}

std::string describe(const process_exit& end) {
  if (end.signal == 0) return "exited with code " + std::to_string(end.exit_code);
  const std::string name = signal_name(end.signal);
  return "was killed by signal " + std::to_string(end.signal) + (name.empty() ? "" : " (" + name + ")");
}

}  // namespace det::process
