#pragma once
// Memory and CPU limits on a run's processes through the kernel's cgroups (v1 memory and cpu
// controllers, or the v2 unified tree), and whether the kernel's OOM killer ended one of them.
// The agent puts each run's process (and so all it starts) in a cgroup of its own when its config
// sets resources.memory_limit or resources.cpu_limit.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "process/unix_identity.hpp"

namespace det::runtime {

class cgroup_limits {
 public:
  /// Cgroups named det/<name> with the limits (0: none), or nullptr with `why` saying why not
  /// (no writable cgroup file system: not root, a container without cgroup access).
  static std::unique_ptr<cgroup_limits> create(const std::string& name, int64_t memory_bytes, double cpus,
                                               std::string& why);
  cgroup_limits(const cgroup_limits&) = delete;
  cgroup_limits& operator=(const cgroup_limits&) = delete;
  /// Removes the cgroups (their processes have ended by then).
  ~cgroup_limits();

  /// `argv` run so that it enters the cgroups before it execs: its first instruction is held to
  /// the limits, with no window in which it could start something outside them.
  std::vector<std::string> entering(const std::vector<std::string>& argv) const;
  /// Lets `who` move its own processes in (entering() runs as the run's user): the cgroups'
  /// cgroup.procs become its. Throws std::runtime_error with a sentence when they cannot.
  void admit(const process::unix_identity& who) const;
  /// Whether the OOM killer killed a process of this cgroup for its memory limit.
  bool oom_killed() const;
  /// Whether its processes' peak use reached the memory limit (filling page cache can too). A
  /// container's own cgroup below this one, where its OOM kill is counted, is gone once it ends:
  /// a container killed by SIGKILL that had reached the limit ran out of memory.
  bool reached_memory_limit() const;
  /// `--cgroup-parent` for podman: the container's cgroups go below these.
  std::string parent_path() const { return "/det/" + name_; }

 private:
  cgroup_limits() = default;
  std::string name_;
  std::vector<std::filesystem::path> dirs_;
  std::filesystem::path memory_dir_;  // where the OOM kill count is
  bool unified_ = false;
};

/// Whether a run held to `limits` (none: nullptr) ended for want of memory: the OOM killer said so,
/// or it was killed by SIGKILL (itself, or a container through podman's exit status 137) after
/// reaching the limit.
inline bool ran_out_of_memory(const cgroup_limits* limits, int exit_code, int signal) {
  return limits && (limits->oom_killed() || ((signal == 9 || exit_code == 128 + 9) && limits->reached_memory_limit()));
}

}  // namespace det::runtime
