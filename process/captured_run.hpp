#pragma once
// Running a short command to its end and keeping what it printed: the provisioner's launch, list
// and terminate commands (sbatch, squeue, a cloud CLI) and the worker's podman calls.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "process/process_exit.hpp"

namespace det::process {

struct captured_output {
  process_exit end;
  bool timed_out = false;  // it ran past its time and was killed
  std::string out;
  std::string err;

  bool succeeded() const { return !timed_out && end.signal == 0 && end.exit_code == 0; }
  /// "exited with code 1: <the last lines of stderr>", for a sentence about what failed.
  std::string failure() const;
  /// Its stdout; throws std::runtime_error "WHAT exited with code 1: ..." unless it succeeded.
  const std::string& output_of(const std::string& what) const;
};

/// Runs `argv` (argv[0] looked up in $PATH) with `env` added, stdin from /dev/null, in a process
/// group of its own that is killed once `limit` passes. Throws std::runtime_error with a sentence
/// when it cannot start.
captured_output run_captured(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                             std::chrono::milliseconds limit = std::chrono::minutes(5));

/// `line` run by /bin/sh -c.
captured_output run_shell(const std::string& line, const std::map<std::string, std::string>& env = {},
                          std::chrono::milliseconds limit = std::chrono::minutes(5));

}  // namespace det::process
