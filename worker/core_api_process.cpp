#include "worker/core_api_process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <exception>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/command_words.hpp"
#include "process/process_exit.hpp"
#include "process/process_spawn.hpp"

namespace det::runtime {

namespace {

// The argv an entrypoint runs as, or the sentence why it cannot run. A list runs as given. One
// string is a command line, read as a shell would (like Docker's shell form): when it is only
// words, they run without a shell in front, so that the stop's SIGTERM reaches the training
// process itself and its exit status is its own; a line with shell syntax (operators, variables,
// globs, command substitution) runs as /bin/sh -c LINE, in the command's own environment and
// working directory.
process::command_words command_line(const std::vector<std::string>& entrypoint) {
  if (entrypoint.size() != 1) return {entrypoint, "", false};
  auto split = process::split_command_line(entrypoint[0]);
  if (split.needs_shell) return {{"/bin/sh", "-c", entrypoint[0]}, "", false};
  return split;
}

} // namespace

std::vector<std::string> entrypoint_argv(const std::vector<std::string>& entrypoint) {
  auto command = command_line(entrypoint);
  if (!command.refusal.empty()) throw std::runtime_error("the entrypoint cannot run: " + command.refusal);
  if (command.words.empty()) throw std::runtime_error("the entrypoint is empty");
  return std::move(command.words);
}

command_result run_command(const std::vector<std::string>& entrypoint, const std::map<std::string, std::string>& env,
                           const std::string& workdir, const std::atomic<bool>& stop,
                           const std::function<void()>& on_poll) {
  std::vector<std::string> argv;
  try {
    argv = entrypoint_argv(entrypoint);
  } catch (const std::exception& e) {
    return {false, false, e.what()};
  }
  return run_argv(std::move(argv), env, workdir, stop, on_poll);
}

command_result run_argv(std::vector<std::string> argv, const std::map<std::string, std::string>& env,
                        const std::string& workdir, const std::atomic<bool>& stop,
                        const std::function<void()>& on_poll) {
  process::spawn_request request;
  request.argv = std::move(argv);
  request.search_path = true;
  request.env = env;
  request.working_dir = workdir;
  request.new_process_group = true;
  request.dies_with_parent = true;
  // Its descendants become ours when their parent dies, so that we can wait for all of them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t pid = -1;
  try {
    pid = process::spawn(request);
  } catch (const std::exception& e) {
    return {false, false, e.what()};
  }
  // Waits for the command and, after a stop, for what it started (a shell's child checkpointing
  // after the shell died of the SIGTERM), up to a grace period; what is left then is killed.
  constexpr auto stop_grace = std::chrono::seconds(60);
  int status = 0;
  bool stopping = false, command_ended = false;
  auto stopped_at = std::chrono::steady_clock::now();
  for (;;) {
    int child_status = 0;
    auto ended = ::waitpid(-1, &child_status, WNOHANG);
    if (ended == pid) {
      status = child_status;
      command_ended = true;
    }
    if (ended < 0 && errno == ECHILD) break;  // every descendant is gone
    if (command_ended && !stopping) break;    // finished on its own: leftovers are killed below
    if (!stopping && stop.load()) {
      stopping = true;
      stopped_at = std::chrono::steady_clock::now();
      ::kill(-pid, SIGTERM);
    }
    if (stopping && std::chrono::steady_clock::now() - stopped_at > stop_grace) break;
    if (ended <= 0) {
      on_poll();
      ::usleep(20000);
    }
  }
  ::kill(-pid, SIGKILL);  // what it left running
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  const auto end = process::exit_from_wait_status(status);
  if (stopping && (end.signal == SIGTERM || (end.signal == 0 && end.exit_code == 128 + SIGTERM)))
    return {true, true, "", end};
  if (end.signal != 0 || end.exit_code != 0) return {false, false, "the entrypoint " + process::describe(end), end};
  return {true, stopping, "", end};
}

} // namespace det::runtime
