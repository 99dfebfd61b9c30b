// Starting child processes (process/process_spawn.hpp) and naming how they ended
// (process/process_exit.hpp). Each case runs through both ways a child is made: posix_spawn, and
// vfork for a child that dies with its parent.
#include "process/process_exit.hpp"
#include "process/process_spawn.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace det;

namespace {

process::spawn_request shell(const std::string& script, bool dies_with_parent) {
  process::spawn_request request;
  request.argv = {"/bin/sh", "-c", script};
  request.dies_with_parent = dies_with_parent;
  return request;
}

process::process_exit run(const process::spawn_request& request) {
  return process::wait_for_exit(process::spawn(request));
}

struct scratch {
  fs::path path;
  scratch() {
    char name[] = "/tmp/det-process-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~scratch() { fs::remove_all(path); }
};

} // namespace

TEST_CASE("a child's exit code comes back") {
  for (bool dies_with_parent : {false, true}) {
    CAPTURE(dies_with_parent);
    auto end = run(shell("exit 3", dies_with_parent));
    CHECK(end.exit_code == 3);
    CHECK(end.signal == 0);
    CHECK(process::describe(end) == "exited with code 3");
  }
}

TEST_CASE("a child that dies of a signal reports the signal by number and name") {
  for (bool dies_with_parent : {false, true}) {
    CAPTURE(dies_with_parent);
    auto end = run(shell("kill -KILL $$", dies_with_parent));
    CHECK(end.signal == SIGKILL);
    CHECK(process::describe(end) == "was killed by signal 9 (SIGKILL)");
  }
  CHECK(process::signal_name(SIGTERM) == "SIGTERM");
  CHECK(process::signal_name(1000) == "");
  CHECK(process::describe({0, 1000}) == "was killed by signal 1000");
}

TEST_CASE("a child sees this process's environment with the request's variables over it") {
  ::setenv("DET_PROCESS_TEST_KEPT", "kept", 1);
  ::setenv("DET_PROCESS_TEST_REPLACED", "old", 1);
  for (bool dies_with_parent : {false, true}) {
    CAPTURE(dies_with_parent);
    auto request = shell(R"(test "$DET_PROCESS_TEST_KEPT" = kept && test "$DET_PROCESS_TEST_REPLACED" = new &&)"
                         R"( test "$DET_PROCESS_TEST_ADDED" = added)",
                         dies_with_parent);
    request.env = {{"DET_PROCESS_TEST_REPLACED", "new"}, {"DET_PROCESS_TEST_ADDED", "added"}};
    CHECK(run(request).exit_code == 0);
  }
  ::unsetenv("DET_PROCESS_TEST_KEPT");
  ::unsetenv("DET_PROCESS_TEST_REPLACED");
}

TEST_CASE("a child runs in the requested directory, with its output where the request puts it") {
  scratch dir;
  for (bool dies_with_parent : {false, true}) {
    CAPTURE(dies_with_parent);
    const auto log = dir.path / ("log-" + std::to_string(dies_with_parent));
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    auto request = shell("pwd; echo oops >&2", dies_with_parent);
    request.working_dir = dir.path.string();
    request.stdout_fd = fd;
    request.stderr_fd = fd;
    CHECK(run(request).exit_code == 0);
    ::close(fd);
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() == dir.path.string() + "\noops\n");
  }
}

TEST_CASE("a child that cannot start is an error that says why") {
  for (bool dies_with_parent : {false, true}) {
    CAPTURE(dies_with_parent);
    process::spawn_request missing;
    missing.argv = {"/nonexistent/program"};
    missing.dies_with_parent = dies_with_parent;
    CHECK_THROWS_WITH(process::spawn(missing), "cannot run /nonexistent/program: No such file or directory");

    auto nowhere = shell("exit 0", dies_with_parent);
    nowhere.working_dir = "/nonexistent/dir";
    CHECK_THROWS_WITH(process::spawn(nowhere), doctest::Contains("/nonexistent/dir"));
  }
}

TEST_CASE("a child starts with no signal blocked, whatever this thread blocks") {
  sigset_t term, previous;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, &previous);
  for (bool dies_with_parent : {false, true}) {
    CAPTURE(dies_with_parent);
    CHECK(run(shell("kill -TERM $$; exit 0", dies_with_parent)).signal == SIGTERM);
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

TEST_CASE("a child in a process group of its own leads it") {
  for (bool dies_with_parent : {false, true}) {
    CAPTURE(dies_with_parent);
    auto request = shell("sleep 30", dies_with_parent);
    request.new_process_group = true;
    const pid_t pid = process::spawn(request);
    CHECK(::getpgid(pid) == pid);
    ::kill(-pid, SIGKILL);
    CHECK(process::wait_for_exit(pid).signal == SIGKILL);
  }
}

TEST_CASE("a child keeps only the descriptors it is given when it asks for that") {
  const int open_fd = ::open("/dev/null", O_RDONLY);  // not close-on-exec: a child inherits it
  REQUIRE(open_fd >= 0);
  const auto script = "test -e /proc/self/fd/" + std::to_string(open_fd);
  for (bool dies_with_parent : {false, true}) {
    CAPTURE(dies_with_parent);
    auto request = shell(script, dies_with_parent);
    CHECK(run(request).exit_code == 0);
    request.close_other_fds = true;
    CHECK(run(request).exit_code != 0);
  }
  ::close(open_fd);
}

TEST_CASE("a child that dies with its parent is killed when the thread that started it ends") {
  pid_t pid = -1;
  std::thread([&] { pid = process::spawn(shell("exec sleep 30", true)); }).join();
  CHECK(process::wait_for_exit(pid).signal == SIGKILL);
}

// Only root can switch users: elsewhere the cases say nothing.
TEST_CASE("a child asked to run as another user runs as that uid and gid, with no other group") {
  if (::geteuid() != 0) return;
  auto request = shell(R"sh(test "$(id -u):$(id -g):$(id -G)" = "200099:200098:200098")sh", false);
  request.run_as = process::unix_identity{200099, 200098};
  CHECK(run(request).exit_code == 0);
}

TEST_CASE("a child enters its directory as its user: one only root may enter is refused with a sentence") {
  if (::geteuid() != 0) return;
  scratch dir;
  fs::permissions(dir.path, fs::perms::owner_all);
  auto request = shell("true", false);
  request.run_as = process::unix_identity{200099, 200099};
  request.working_dir = dir.path.string();
  CHECK_THROWS_WITH_AS(process::spawn(request), doctest::Contains(("cannot enter " + dir.path.string()).c_str()), std::runtime_error);
}

TEST_CASE("a child given a passwd file sees it as /etc/passwd, and nobody else does") {
  if (::geteuid() != 0) return;
  scratch dir;
  const auto passwd = dir.path / "passwd";
  std::ofstream(passwd) << "det-user-99:x:200099:200099::/tmp:/bin/sh\n";
  fs::permissions(dir.path, fs::perms::owner_all | fs::perms::others_exec | fs::perms::group_exec);
  auto request = shell(R"sh(test "$(id -un)" = det-user-99)sh", true);
  request.run_as = process::unix_identity{200099, 200099};
  request.passwd_file = passwd.string();
  CHECK(run(request).exit_code == 0);
  std::ifstream machine{"/etc/passwd"};
  std::stringstream text;
  text << machine.rdbuf();
  CHECK(text.str().find("det-user-99") == std::string::npos);
}
