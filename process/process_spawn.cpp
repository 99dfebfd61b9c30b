#include "process/process_spawn.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string_view>

extern char** environ;

namespace det::process {

namespace {

// Strings with the null-terminated char* array exec takes, built before the child exists: after
// vfork the child may only make system calls.
class c_string_array {
public:
  explicit c_string_array(std::vector<std::string> strings) : strings_(std::move(strings)) {
    for (auto& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  c_string_array(const c_string_array&) = delete;
  c_string_array& operator=(const c_string_array&) = delete;
  char* const* get() const { return pointers_.data(); }

private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

// This process's environment with `overrides` applied: the one place a child's environment is made.
std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry{*e};
    const auto eq = entry.find('=');
    // emplace keeps the first of duplicated names, the one getenv returns.
    if (eq != std::string_view::npos) merged.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (const auto& [name, value] : overrides) merged[name] = value;
  std::vector<std::string> entries;
  entries.reserve(merged.size());
  for (const auto& [name, value] : merged) entries.push_back(name + "=" + value);
  return entries;
}

// The steps of starting a child that can fail, for the sentence that says which did.
enum class step { start, enter_directory, name_user, switch_user, run };

std::runtime_error failure(const spawn_request& request, step failed, int error) {
  const std::string& program = request.argv.front();
  const std::string reason = std::strerror(error);
  switch (failed) {
  case step::enter_directory:
    return std::runtime_error("cannot enter " + request.working_dir + " to run " + program + ": " + reason);
  case step::name_user:
    return std::runtime_error("cannot run " + program + " with " + request.passwd_file + " as its /etc/passwd: " + reason);
  case step::switch_user:
    return std::runtime_error("cannot run " + program + " as uid " + std::to_string(request.run_as->uid) + " gid " +
                              std::to_string(request.run_as->gid) + ": " + reason);
  case step::run:
    return std::runtime_error("cannot run " + program +
                              (request.working_dir.empty() ? "" : " in " + request.working_dir) + ": " + reason);
  case step::start:
    break;
  }
  return std::runtime_error("cannot start " + program + ": " + reason);
}

// posix_spawn does what the request asks without copying this process's memory, and reports a
// failed exec as its result.
pid_t spawn_with_posix_spawn(const spawn_request& request, char* const* argv, char* const* envp) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  if (int error = ::posix_spawn_file_actions_init(&actions); error != 0) throw failure(request, step::start, error);
  if (int error = ::posix_spawnattr_init(&attributes); error != 0) {
    ::posix_spawn_file_actions_destroy(&actions);
    throw failure(request, step::start, error);
  }
  int error = 0;
  auto keep_first_error = [&error](int result) {
    if (error == 0) error = result;
  };
  short flags = POSIX_SPAWN_SETSIGMASK;
  sigset_t none;
  ::sigemptyset(&none);
  keep_first_error(::posix_spawnattr_setsigmask(&attributes, &none));
  if (request.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    keep_first_error(::posix_spawnattr_setpgroup(&attributes, 0));
  }
  keep_first_error(::posix_spawnattr_setflags(&attributes, flags));
  const int targets[] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
  const int sources[] = {request.stdin_fd, request.stdout_fd, request.stderr_fd};
  for (int i = 0; i < 3; ++i)
    if (sources[i] >= 0) keep_first_error(::posix_spawn_file_actions_adddup2(&actions, sources[i], targets[i]));
  if (!request.working_dir.empty())
    keep_first_error(::posix_spawn_file_actions_addchdir_np(&actions, request.working_dir.c_str()));
  if (request.close_other_fds)
    keep_first_error(::posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1));
  pid_t pid = -1;
  if (error == 0)
    error = request.search_path ? ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv, envp)
                                : ::posix_spawn(&pid, argv[0], &actions, &attributes, argv, envp);
  ::posix_spawnattr_destroy(&attributes);
  ::posix_spawn_file_actions_destroy(&actions);
  // The error may be the chdir's as well as the exec's; "cannot run X in DIR" covers both.
  if (error != 0) throw failure(request, step::run, error);
  return pid;
}

// posix_spawn cannot set a parent-death signal nor switch users in the child, so such children are made here the
// way glibc's posix_spawn makes its own: vfork, in which the child borrows this process's memory
// until exec (no page tables copied, which made fork an agent's largest cost per trial run) and
// may only make system calls.
pid_t spawn_with_vfork(const spawn_request& request, char* const* argv, char* const* envp) {
  rlimit files{};
  const int max_fd = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536 ? int(files.rlim_cur) : 65536;
  // The child writes why it failed here, in the memory it shares with us; volatile, so that the
  // compiler does not assume the child left it alone.
  volatile step failed_step = step::start;
  volatile int failed_errno = 0;
  const pid_t parent = ::getpid();
  // Every signal stays blocked until the child's exec, so that no handler of this process runs in
  // the child while it shares our memory.
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::vfork();
  if (pid == 0) {
    auto fail = [&](step at) {
      failed_errno = errno;
      failed_step = at;
      ::_exit(127);
    };
    // The handlers are this process's: a signal that arrives once the mask is cleared before exec
    // must take its default action in the child instead.
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction action {};
      if (::sigaction(sig, nullptr, &action) == 0 && action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN) {
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        ::sigaction(sig, &default_action, nullptr);
      }
    }
    // The user is switched to first: a change of credentials clears the parent-death signal set
    // below, and the directory must be entered with the user's rights (a directory the user could
    // not reach must not become its working directory through ours).
    if (!request.passwd_file.empty()) {
      // Mounts of the machine still reach the child (slave); its own binding reaches nobody else.
      if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 ||
          ::mount(request.passwd_file.c_str(), "/etc/passwd", nullptr, MS_BIND, nullptr) != 0)
        fail(step::name_user);
    }
    if (request.run_as) {
      if (int error = become_in_vfork_child(*request.run_as); error != 0) {
        errno = error;
        fail(step::switch_user);
      }
    }
    if (request.dies_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died before the prctl took effect
    }
    if (request.new_process_group && ::setpgid(0, 0) != 0) fail(step::start);
    if (request.stdin_fd >= 0 && ::dup2(request.stdin_fd, STDIN_FILENO) < 0) fail(step::start);
    if (request.stdout_fd >= 0 && ::dup2(request.stdout_fd, STDOUT_FILENO) < 0) fail(step::start);
    if (request.stderr_fd >= 0 && ::dup2(request.stderr_fd, STDERR_FILENO) < 0) fail(step::start);
    if (!request.working_dir.empty() && ::chdir(request.working_dir.c_str()) != 0) fail(step::enter_directory);
    if (request.close_other_fds && ::close_range(STDERR_FILENO + 1, ~0U, 0) != 0)
      for (int fd = STDERR_FILENO + 1; fd < max_fd; ++fd) ::close(fd);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (request.search_path)
      ::execvpe(argv[0], argv, envp);
    else
      ::execve(argv[0], argv, envp);
    fail(step::run);
  }
  const int vfork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) throw failure(request, step::start, vfork_errno);
  if (failed_errno != 0) {
    ::waitpid(pid, nullptr, 0);
    throw failure(request, failed_step, failed_errno);
  }
  return pid;
}

}  // namespace

pid_t spawn(const spawn_request& request) {
  if (request.argv.empty() || request.argv.front().empty())
    throw std::runtime_error("a child process needs a program to run, and none was given");
  const c_string_array argv{request.argv};
  const c_string_array envp{merged_environment(request.env)};
  return request.dies_with_parent || request.run_as || !request.passwd_file.empty() ? spawn_with_vfork(request, argv.get(), envp.get())
                                                    : spawn_with_posix_spawn(request, argv.get(), envp.get());
}

}  // namespace det::process
