#include "provisioner/agent_processes.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace det::provisioner {

namespace {

std::string file_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> nul_separated(const std::filesystem::path& file) {
  const auto text = file_text(file);
  std::vector<std::string> parts;
  size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return parts;
}

// The parent pid from /proc/PID/stat, after the command name in parentheses (which may hold
// spaces and parentheses itself); 0 when the process ended meanwhile.
pid_t parent_of(const std::filesystem::path& process) {
  const auto text = file_text(process / "stat");
  const auto after_name = text.rfind(')');
  if (after_name == std::string::npos) return 0;
  std::istringstream fields(text.substr(after_name + 1));
  std::string state;
  pid_t parent = 0;
  fields >> state >> parent;
  return parent;
}

// The value of `--name=` in argv, or "" without one.
std::string flag(const std::vector<std::string>& argv, const std::string& name) {
  const auto prefix = "--" + name + "=";
  for (const auto& arg : argv)
    if (arg.rfind(prefix, 0) == 0) return arg.substr(prefix.size());
  return {};
}

}  // namespace

std::vector<agent_process> agent_processes() {
  std::vector<agent_process> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto argv = nul_separated(entry.path() / "cmdline");  // empty for a zombie
    if (argv.size() < 2 || argv[1] != "--role=agent") continue;
    agent_process process{static_cast<pid_t>(std::stol(name)), parent_of(entry.path()), std::move(argv), ""};
    for (const auto& variable : nul_separated(entry.path() / "environ"))
      if (variable.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) process.gpus = variable.substr(21);
    out.push_back(std::move(process));
  }
  return out;
}

std::map<std::string, agent_process> pool_agents(const std::vector<agent_process>& processes, const std::string& pool,
                                                 const std::set<std::string>& ids) {
  std::multimap<std::string, const agent_process*> ours;
  for (const auto& process : processes) {
    auto id = flag(process.argv, "id");
    if (flag(process.argv, "pool") == pool && ids.count(id)) ours.emplace(std::move(id), &process);
  }
  std::map<std::string, agent_process> out;
  for (const auto& [id, process] : ours) {
    const auto same_id = ours.equal_range(id);
    const bool started_by_one = std::any_of(same_id.first, same_id.second,
                                            [&](const auto& other) { return other.second->pid == process->parent; });
    if (!started_by_one) out[id] = *process;
  }
  return out;
}

}  // namespace det::provisioner
