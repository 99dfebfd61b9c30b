#pragma once

#include <string>
#include <vector>

namespace det::storage {

/// Runs argv[0] (a path) with argv in working_dir, stdin from /dev/null and stdout and stderr appended to log_path,
/// and waits for it. Returns the exit status, or 128 + the signal that ended it; throws std::runtime_error with a
/// sentence when the log cannot be opened or the program cannot be started (process/process_spawn.hpp).
/// The child inherits no other descriptors: a server it starts outlives this process and must not hold its sockets.
int run_process(const std::vector<std::string>& argv, const std::string& working_dir, const std::string& log_path);

/// The full path of an executable found in $PATH or the sbin directories, or "" when there is none.
std::string find_executable(const std::string& name);

}  // namespace det::storage
