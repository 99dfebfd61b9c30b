#pragma once
// A Core API trial: the experiment's entrypoint command, run by the worker in the trial's working
// directory. The process reports to the master over REST (det_core.py); the worker only starts
// it, passes on its output and reports how it ended.

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "process/process_exit.hpp"

namespace det::runtime {

struct command_result {
  bool success = false;
  bool stopped = false;  // it ended on the stop it was sent
  std::string message;   // how it failed, as a sentence
  process::process_exit end;  // how the command ended, when it ran
};

/// Runs `entrypoint` in `workdir` with `env` added to this process's environment, in a process
/// group of its own, and waits for it. Several strings are the program and its arguments; one
/// string is a command line, run without a shell when it is only words
/// (process/command_words.hpp) and through /bin/sh -c when it uses shell syntax. Once `stop` is
/// set the group gets SIGTERM (the process checkpoints and exits); ending by that SIGTERM counts
/// as stopped. Whatever is left of the group is killed when the command ends. Its output goes
/// where this process's goes; it dies with this process. `on_poll` runs every 20 ms or so while
/// it waits.
command_result run_command(const std::vector<std::string>& entrypoint, const std::map<std::string, std::string>& env,
                           const std::string& workdir, const std::atomic<bool>& stop,
                           const std::function<void()>& on_poll);

/// The argv an entrypoint runs as (as run_command reads it); throws std::runtime_error with the
/// sentence why it cannot run.
std::vector<std::string> entrypoint_argv(const std::vector<std::string>& entrypoint);

/// run_command for an argv as given: the program (looked up in PATH) and its arguments. A stop's
/// SIGTERM that ends it, by the signal or by a wrapper's exit code 143, counts as stopped.
command_result run_argv(std::vector<std::string> argv, const std::map<std::string, std::string>& env,
                        const std::string& workdir, const std::atomic<bool>& stop,
                        const std::function<void()>& on_poll);

} // namespace det::runtime
