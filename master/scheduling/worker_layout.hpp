#pragma once
// How the slots of one run become worker processes, and their ranks. A LibTorch run on GPU slots
// trains as one worker per slot, each with one CUDA device (NCCL needs a device per rank); any
// other run has one process per agent: a LibTorch run on CPU slots (one Gloo rank that uses the
// agent's cores), a Core API trial (its launcher starts one process per slot itself, as in
// Determined), builtin:simulate and tasks.

#include <cstdint>
#include <vector>

#include "messages/cluster.pb.h"

namespace det {

/// What an agent's slots are: all of one agent's are of one kind.
enum class slot_kind : uint8_t { cpu, cuda };

/// One agent's share of a run: its slots' kind and how many.
struct run_part_slots {
  slot_kind kind = slot_kind::cpu;
  int32_t slots = 0;
};

/// The workers one agent starts for a run: ranks first_rank .. first_rank + workers - 1.
struct worker_range {
  int32_t first_rank = 0;
  int32_t workers = 1;
};

struct worker_layout {
  std::vector<worker_range> parts;  // in the order of the run's parts; part 0 holds the chief
  int32_t world_size = 0;
};

/// The layout of a run whose parts are `parts` and whose worker loads `runtime` (a task's
/// process: WORKER_RUNTIME_UNSPECIFIED).
worker_layout lay_out_workers(const std::vector<run_part_slots>& parts, pb::WorkerRuntime runtime);

}  // namespace det
