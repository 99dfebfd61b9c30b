#pragma once
// A Core API trial: the experiment's entrypoint command, run by the worker in the trial's working
// directory. The process reports to the master over REST (det_core.py); the worker only starts
// it, passes on its output and reports how it ended.

#include <map>
#include <string>
#include <vector>

namespace det::runtime {

struct command_result {
  bool success = false;
  std::string message;  // how it failed, as a sentence
};

/// Runs `entrypoint` (one string: through /bin/sh -c; several: the program and its arguments)
/// in `workdir` with `env` added to this process's environment, and waits for it. Its output
/// goes where this process's goes. It dies with this process.
command_result run_command(const std::vector<std::string>& entrypoint, const std::map<std::string, std::string>& env,
                           const std::string& workdir);

} // namespace det::runtime
