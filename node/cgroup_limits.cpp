#include "node/cgroup_limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace det::runtime {

namespace {

const std::filesystem::path cgroup_root = "/sys/fs/cgroup";

void write_file(const std::filesystem::path& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + value + " to " + file.string() + ": " + std::strerror(errno));
}

// A counter line "name N" of a cgroup's key-value file (memory.oom_control, memory.events).
int64_t counter(const std::filesystem::path& file, const std::string& name) {
  std::ifstream in(file);
  std::string key;
  int64_t value = 0;
  while (in >> key >> value)
    if (key == name) return value;
  return 0;
}

}  // namespace

std::unique_ptr<cgroup_limits> cgroup_limits::create(const std::string& name, int64_t memory_bytes, double cpus,
                                                     std::string& why) {
  std::unique_ptr<cgroup_limits> limits(new cgroup_limits());
  limits->name_ = name;
  limits->unified_ = std::filesystem::exists(cgroup_root / "cgroup.controllers");
  try {
    constexpr int64_t period_us = 100000;
    const auto quota_us = std::to_string(static_cast<int64_t>(cpus * period_us));
    if (limits->unified_) {
      auto dir = cgroup_root / "det" / name;  // parent_path() for podman
      std::filesystem::create_directories(dir);
      // v2 hands a controller to children only when their parent enables it.
      write_file(cgroup_root / "det" / "cgroup.subtree_control", "+memory +cpu");
      limits->dirs_.push_back(dir);
      limits->memory_dir_ = dir;
      if (memory_bytes > 0) {
        write_file(dir / "memory.max", std::to_string(memory_bytes));
        write_file(dir / "memory.swap.max", "0");
      }
      if (cpus > 0) write_file(dir / "cpu.max", quota_us + " " + std::to_string(period_us));
    } else {
      if (memory_bytes > 0) {
        auto dir = cgroup_root / "memory" / "det" / name;
        std::filesystem::create_directories(dir);
        limits->dirs_.push_back(dir);
        limits->memory_dir_ = dir;
        write_file(dir / "memory.limit_in_bytes", std::to_string(memory_bytes));
        // Without swap accounting the limit is on RAM alone; with it, swap counts too.
        if (std::filesystem::exists(dir / "memory.memsw.limit_in_bytes"))
          write_file(dir / "memory.memsw.limit_in_bytes", std::to_string(memory_bytes));
      }
      if (cpus > 0) {
        auto dir = cgroup_root / "cpu" / "det" / name;
        std::filesystem::create_directories(dir);
        limits->dirs_.push_back(dir);
        write_file(dir / "cpu.cfs_period_us", std::to_string(period_us));
        write_file(dir / "cpu.cfs_quota_us", quota_us);
      }
    }
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
  return limits;
}

cgroup_limits::~cgroup_limits() {
  // A cgroup can be removed once its last process has gone, which the kernel may note a moment
  // after the process is reaped. podman, given this as a parent, makes det/NAME in every v1
  // controller, with conmon's cgroup inside: those go too.
  auto remove = [](const std::filesystem::path& dir) {
    for (int attempt = 0; attempt < 20 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++attempt)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  std::vector<std::filesystem::path> dirs = dirs_;
  std::error_code ec;
  if (!unified_)
    for (const auto& controller : std::filesystem::directory_iterator(cgroup_root, ec))
      if (auto dir = controller.path() / "det" / name_; std::filesystem::is_directory(dir, ec)) dirs.push_back(dir);
  for (const auto& dir : dirs) {
    for (const auto& child : std::filesystem::directory_iterator(dir, ec))
      if (child.is_directory(ec)) remove(child.path());
    remove(dir);
  }
}

bool cgroup_limits::reached_memory_limit() const {
  if (memory_dir_.empty()) return false;
  if (unified_) return counter(memory_dir_ / "memory.events", "max") > 0;
  // The failure counts stay 0 when the charge that fails is a child cgroup's (a container's); the
  // peak usage still shows the limit was reached.
  auto number = [&](const char* file) {
    std::ifstream in(memory_dir_ / file);
    int64_t value = -1;
    in >> value;
    return value;
  };
  const auto limit = number("memory.limit_in_bytes");
  return limit > 0 && std::max(number("memory.max_usage_in_bytes"), number("memory.memsw.max_usage_in_bytes")) >= limit;
}

std::vector<std::string> cgroup_limits::entering(const std::vector<std::string>& argv) const {
  // sh moves itself ($$) into each cgroup, then becomes the program with its arguments.
  std::string script;
  for (const auto& dir : dirs_) script += "echo $$ > '" + (dir / "cgroup.procs").string() + "' && ";
  script += "exec \"$0\" \"$@\"";
  std::vector<std::string> out{"/bin/sh", "-c", script};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void cgroup_limits::admit(const process::unix_identity& who) const {
  for (const auto& dir : dirs_) {
    const auto procs = dir / "cgroup.procs";
    if (::chown(procs.c_str(), who.uid, who.gid) != 0)
      throw std::runtime_error("cannot let uid " + std::to_string(who.uid) + " enter " + dir.string() + ": " +
                               std::strerror(errno));
  }
}

bool cgroup_limits::oom_killed() const {
  if (memory_dir_.empty()) return false;
  return unified_ ? counter(memory_dir_ / "memory.events", "oom_kill") > 0
                  : counter(memory_dir_ / "memory.oom_control", "oom_kill") > 0;
}

}  // namespace det::runtime
