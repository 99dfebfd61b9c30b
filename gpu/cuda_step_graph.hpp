#pragma once
// A training step captured once as a CUDA graph and replayed for every later batch of the same
// shapes: one launch instead of the hundreds of kernel launches of a forward, backward and
// optimizer step, which is what bounds small batches on a GPU. Built only against a CUDA LibTorch
// (cuda_step_graph.cpp); elsewhere capture_step_graph says why it cannot.
// Internal to libdet_torch_trials.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace det::harness {

class step_graph {
 public:
  virtual ~step_graph() = default;
  /// Runs the step: eagerly for the first warm-up calls (on a side stream, as capture needs), then
  /// captures it and replays it at this and every later call. The step must read its inputs from,
  /// and write its results to, tensors that outlive the graph, allocate nothing it keeps across
  /// calls after the warm-up, and never wait for the device (no item(), no host branches on
  /// device values).
  virtual void run() = 0;
};

/// Whether this build can capture steps (a CUDA LibTorch) and the device `device_index` can run
/// them; otherwise `why_not` says why.
bool step_graphs_available(std::string& why_not);

/// A graph of `step` on the current CUDA device after `warmup_calls` eager calls.
std::unique_ptr<step_graph> capture_step_graph(std::function<void()> step, int warmup_calls);

/// Free memory on the current CUDA device in bytes (0 without CUDA).
int64_t cuda_free_memory();

}  // namespace det::harness
