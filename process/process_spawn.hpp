#pragma once
// Starting a child process, the one place det does it: the embedded PostgreSQL's programs
// (storage/child_process.cpp), an agent's workers (agent/child_process.cpp) and a worker's Core
// API command (worker/core_api_process.cpp). Each caller says what its child needs in a
// spawn_request; how the child is made follows from that.

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "process/unix_identity.hpp"

namespace det::process {

/// What a child starts with. Whatever the request, it starts with no signal blocked: a parent
/// that blocks signals for its own sigwait must not pass that on.
struct spawn_request {
  /// The program and its arguments; argv[0] is a path, or with `search_path` a name looked up in
  /// $PATH when it has no slash.
  std::vector<std::string> argv;
  bool search_path = false;
  /// Added to this process's environment, replacing variables of the same name.
  std::map<std::string, std::string> env;
  /// Where it runs; empty: this process's working directory.
  std::string working_dir;
  /// Descriptors that become its stdin, stdout and stderr; -1: this process's own.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  /// Closes every descriptor above stderr, not only the close-on-exec ones: for a child that
  /// starts a server, which outlives this process and must not hold its sockets.
  bool close_other_fds = false;
  /// Runs it in a process group of its own, so that a signal to the group reaches all it starts.
  bool new_process_group = false;
  /// Kills it with SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG), even when this
  /// process is killed with SIGKILL.
  bool dies_with_parent = false;
  /// The user it runs as, switched to after its descriptors and directory are set and before
  /// its program starts (a root agent's child for a det user's work); nullopt: this process's.
  std::optional<unix_identity> run_as;
  /// A file the child sees as /etc/passwd, bound over it in a mount namespace of its own before
  /// `run_as` is switched to: a user this machine does not know gets a name there (sshd serves
  /// no user without one). Empty: the machine's own.
  std::string passwd_file;
};

/// Starts the child and returns its pid. Throws std::runtime_error with a sentence when it cannot
/// start: the program is missing or not executable (for `run_as`), the working directory cannot
/// be entered, the user cannot be switched to, no process can be created.
pid_t spawn(const spawn_request& request);

}  // namespace det::process
