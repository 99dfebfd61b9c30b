#pragma once
// What an agent's container for a trial's run holds: one worker, or one per GPU slot
// (StartContainer.workers, master/scheduling/worker_layout.hpp), and how their ends make the container's.

#include <cstddef>
#include <optional>
#include <vector>

#include "messages/cluster.pb.h"
#include "process/process_exit.hpp"

namespace det::runtime {

/// The container's workers, each as the StartContainer of a container of one worker: ranks
/// start.rank() onwards, one slot each when there are several (and so one GPU each), all the
/// slots when there is one. Throws std::runtime_error when start.workers() is neither 1 nor the
/// number of slots: the run's other workers would wait for ranks that never come.
std::vector<pb::StartContainer> split_into_workers(const pb::StartContainer& start);

/// How a container's processes end together: it has ended once all of them have, as the first of
/// them that failed did, or else as the last. A failure while others still run ends the others:
/// they cannot train without it (NCCL would wait for it until its deadline).
class container_exits {
 public:
  explicit container_exits(std::size_t processes) : ended_(processes, false) {}
  /// Process `index` ended as `end`; true when it is the first failure and others still run,
  /// which the caller then kills. A second report of the same process changes nothing.
  bool ended(std::size_t index, process::process_exit end);
  bool all_ended() const;
  /// Whether process `index` has ended: its pid, and so its process group, may be another's now.
  bool has_ended(std::size_t index) const { return index < ended_.size() && ended_[index]; }
  /// How the container ended, once all_ended().
  process::process_exit outcome() const { return failure_ ? *failure_ : last_; }

 private:
  std::vector<bool> ended_;
  std::optional<process::process_exit> failure_;
  process::process_exit last_;
};

}  // namespace det::runtime
