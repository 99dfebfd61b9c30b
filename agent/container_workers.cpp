#include "agent/container_workers.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace det::runtime {

std::vector<pb::StartContainer> split_into_workers(const pb::StartContainer& start) {
  const int workers = std::max(start.workers(), 1);
  if (workers == 1) return {start};
  if (workers != start.slot_ids_size())
    throw std::runtime_error("the master asked for " + std::to_string(workers) + " workers on " +
                             std::to_string(start.slot_ids_size()) + " slots; a container has one worker or one per slot");
  std::vector<pb::StartContainer> split;
  for (int i = 0; i < workers; ++i) {
    auto& worker = split.emplace_back(start);
    worker.clear_slot_ids();
    worker.add_slot_ids(start.slot_ids(i));
    worker.set_rank(start.rank() + i);
    worker.set_workers(1);
  }
  return split;
}

bool container_exits::ended(std::size_t index, process::process_exit end) {
  if (index >= ended_.size() || ended_[index]) return false;
  ended_[index] = true;
  last_ = end;
  const bool failed = end.exit_code != 0 || end.signal != 0;
  if (!failed || failure_) return false;
  failure_ = end;
  return !all_ended();
}

bool container_exits::all_ended() const {
  return std::all_of(ended_.begin(), ended_.end(), [](bool e) { return e; });
}

}  // namespace det::runtime
