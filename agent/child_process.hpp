#pragma once
// A worker process started by an agent: our "container". Its stdout and
// stderr are read line by line on a thread of its own, and its end is
// reported after both streams are drained, so no log line arrives after the
// exit event.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "process/process_exit.hpp"
#include "process/process_spawn.hpp"

namespace det::runtime {

class child_process {
public:
  using line_handler = std::function<void(const std::string& stream, std::string line)>;
  using exit_handler = std::function<void(process::process_exit)>;

  /// Starts what `request` says (its program, environment, directory) in a process group of
  /// its own, its output read into `on_line`; it is killed when the thread that started it ends,
  /// even when the agent is killed with SIGKILL. Throws std::runtime_error with a sentence if
  /// the program cannot be started.
  static std::shared_ptr<child_process> start(process::spawn_request request, line_handler on_line,
                                              exit_handler on_exit);

  int pid() const { return pid_; }

  /// Sends `sig` to the whole process group (the worker and anything it started).
  void signal(int sig) const;

private:
  explicit child_process(int pid) : pid_(pid) {}
  int pid_;
};

} // namespace det::runtime
