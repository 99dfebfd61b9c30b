#pragma once
// How a child process ended, and the words for it: the one place det names a signal.

#include <sys/types.h>

#include <string>

namespace det::process {

/// How a child process ended.
struct process_exit {
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // the signal that ended it, 0 if it exited
};

/// The end a waitpid status describes.
process_exit exit_from_wait_status(int status);

/// Waits for the child `pid` to end, through interruptions by signals. Throws std::runtime_error
/// with a sentence when there is no such child (another wait took it).
process_exit wait_for_exit(pid_t pid);

/// "SIGKILL" for 9; empty for a number that names no signal.
std::string signal_name(int signal);

/// "exited with code 3" or "was killed by signal 9 (SIGKILL)", to follow the child's name:
/// "the entrypoint " + describe(end).
std::string describe(const process_exit& end);

}  // namespace det::process
