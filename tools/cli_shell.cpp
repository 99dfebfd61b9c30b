#include "tools/cli_shell.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "process/process_exit.hpp"
#include "process/process_spawn.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {
namespace {

// This program, for ssh's ProxyCommand.
std::string own_executable() {
  char path[PATH_MAX] = {};
  auto n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : "det";
}

// A private directory holding the shell's key and its sshd's host key, removed when done.
struct key_directory {
  std::filesystem::path path;
  key_directory() {
    auto pattern = (std::filesystem::temp_directory_path() / "det-shell-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a directory for the shell's keys");
    path = pattern;
  }
  ~key_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const auto file = (path / name).string();
    std::ofstream(file) << text;
    ::chmod(file.c_str(), 0600);
    return file;
  }
};

std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

int start_shell(rest_client& master, const task_launch& launch, bool detach) {
  const auto id = create_task(master, pb::TASK_KIND_SHELL, launch);
  if (detach) {
    std::cout << id << std::endl;
    return 0;
  }
  return open_shell(master, id, {});
}

int open_shell(rest_client& master, const std::string& id, const std::vector<std::string>& command) {
  const auto shell = wait_ready(master, pb::TASK_KIND_SHELL, id);
  if (shell.private_key().empty())
    throw std::runtime_error("only the owner of shell " + id + " (" + shell.owner() + ") or an admin may open it");
  key_directory keys;
  const auto alias = "det-shell-" + id;
  const auto key = keys.write("key", shell.private_key());
  const auto known_hosts = keys.write("known_hosts", alias + " " + shell.host_public_key() + "\n");
  process::spawn_request ssh;
  ssh.search_path = true;
  ssh.argv = {"ssh",
              "-o", "ProxyCommand=" + quoted(own_executable()) + " -m " + quoted(master.master_url()) + " tunnel " + id,
              "-o", "HostKeyAlias=" + alias,
              "-o", "UserKnownHostsFile=" + known_hosts,
              "-o", "StrictHostKeyChecking=yes",
              "-o", "IdentitiesOnly=yes",
              "-o", "IdentityFile=" + key,
              "-o", "LogLevel=ERROR",
              "-o", "ServerAliveInterval=30"};
  if (command.empty()) ssh.argv.push_back("-tt");
  ssh.argv.push_back(shell.service_user().empty() ? alias : shell.service_user() + "@" + alias);
  for (const auto& word : command) ssh.argv.push_back(word);
  // det tunnel finds the login through the environment when it was given as DET_USER_TOKEN.
  const auto end = process::wait_for_exit(process::spawn(ssh));
  return end.signal != 0 ? 128 + end.signal : end.exit_code;
}

} // namespace det::tools
