#include "master/scheduling/worker_layout.hpp"

#include <algorithm>

namespace det {

worker_layout lay_out_workers(const std::vector<run_part_slots>& parts, pb::WorkerRuntime runtime) {
  worker_layout layout;
  for (const auto& part : parts) {
    const bool per_slot = runtime == pb::WORKER_RUNTIME_LIBTORCH && part.kind == slot_kind::cuda;
    const int32_t workers = per_slot ? std::max(part.slots, int32_t{1}) : 1;
    layout.parts.push_back({layout.world_size, workers});
    layout.world_size += workers;
  }
  return layout;
}

}  // namespace det
