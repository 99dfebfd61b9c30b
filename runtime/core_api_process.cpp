#include "runtime/core_api_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace det::runtime {

command_result run_command(const std::vector<std::string>& entrypoint, const std::map<std::string, std::string>& env,
                           const std::string& workdir) {
  std::vector<std::string> argv = entrypoint.size() == 1 ? std::vector<std::string>{"/bin/sh", "-c", entrypoint[0]}
                                                         : entrypoint;
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
  int exec_errno = 0;
  // vfork: the child shares our memory until execve, so exec_errno reaches us.
  pid_t pid = ::vfork();
  if (pid < 0) return {false, std::string("cannot start the entrypoint: ") + std::strerror(errno)};
  if (pid == 0) {
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
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (exec_errno != 0)
    return {false, "cannot run " + argv[0] + " in " + workdir + ": " + std::strerror(exec_errno)};
  if (WIFSIGNALED(status)) {
    const char* name = ::sigabbrev_np(WTERMSIG(status));
    return {false, "the entrypoint was killed by signal " + std::to_string(WTERMSIG(status)) +
                       (name ? " (SIG" + std::string(name) + ")" : "")};
  }
  if (WEXITSTATUS(status) != 0)
    return {false, "the entrypoint exited with code " + std::to_string(WEXITSTATUS(status))};
  return {true, ""};
}

} // namespace det::runtime
