#include "runtime/core_api_process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace det::runtime {

namespace {

// A command without shell syntax runs as itself, so that signals reach the training process
// rather than a shell in front of it.
std::vector<std::string> command_line(const std::vector<std::string>& entrypoint) {
  if (entrypoint.size() != 1) return entrypoint;
  const auto& text = entrypoint[0];
  if (text.find_first_of("|&;<>()$`\\\"'*?[]#~=%{}\n") != std::string::npos)
    return {"/bin/sh", "-c", text};
  std::vector<std::string> words;
  std::string word;
  for (char c : text + " ") {
    if (c == ' ' || c == '\t') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  return words;
}

} // namespace

command_result run_command(const std::vector<std::string>& entrypoint, const std::map<std::string, std::string>& env,
                           const std::string& workdir, const std::atomic<bool>& stop,
                           const std::function<void()>& on_poll) {
  std::vector<std::string> argv = command_line(entrypoint);
  if (argv.empty()) return {false, false, "the entrypoint is empty"};
  // Its descendants become ours when their parent dies, so that we can wait for all of them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv{*e};
    auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& kv : env_strings) envp.push_back(kv.data());
  envp.push_back(nullptr);
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);

  const pid_t parent = ::getpid();
  // vfork: the child shares our memory until execve, so exec_errno reaches us (volatile: the
  // compiler must not assume the child left it alone).
  volatile int exec_errno = 0;
  pid_t pid = ::vfork();
  if (pid < 0) return {false, false, std::string("cannot start the entrypoint: ") + std::strerror(errno)};
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (::chdir(workdir.c_str()) != 0) {
      exec_errno = errno;
      ::_exit(127);
    }
    ::execvpe(args[0], args.data(), envp.data());
    exec_errno = errno;
    ::_exit(127);
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
  if (exec_errno != 0)
    return {false, false, "cannot run " + argv[0] + " in " + workdir + ": " + std::strerror(exec_errno)};
  if (WIFSIGNALED(status)) {
    if (stopping && WTERMSIG(status) == SIGTERM) return {true, true, ""};
    const char* name = ::sigabbrev_np(WTERMSIG(status));
    return {false, false, "the entrypoint was killed by signal " + std::to_string(WTERMSIG(status)) +
                              (name ? " (SIG" + std::string(name) + ")" : "")};
  }
  if (WEXITSTATUS(status) != 0)
    return {false, false, "the entrypoint exited with code " + std::to_string(WEXITSTATUS(status))};
  return {true, stopping, ""};
}

} // namespace det::runtime
