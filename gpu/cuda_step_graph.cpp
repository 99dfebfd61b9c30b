#include "gpu/cuda_step_graph.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <utility>

namespace det::harness {
namespace {

// `waiting` runs what is queued on it after what `queued` has queued so far.
void wait(const c10::cuda::CUDAStream& waiting, const c10::cuda::CUDAStream& queued) {
  at::cuda::CUDAEvent done;
  done.record(queued);
  done.block(waiting);
}

class captured_step final : public step_graph {
 public:
  captured_step(std::function<void()> step, int warmup_calls) : step_(std::move(step)), warmup_left_(warmup_calls) {}

  void run() override {
    if (captured_) {
      graph_.replay();
      return;
    }
    // Warm-up and capture run on a side stream (capture cannot use the legacy default stream),
    // ordered after what the current stream queued (the batch's copy into the step's inputs).
    auto current = c10::cuda::getCurrentCUDAStream();
    wait(side_, current);
    {
      c10::cuda::CUDAStreamGuard on_side(side_);
      if (warmup_left_ > 0) {
        --warmup_left_;
        step_();
      } else {
        // Autocast's cast cache would keep tensors of the capture's memory pool past it.
        const bool cache = at::autocast::is_autocast_cache_enabled();
        at::autocast::set_autocast_cache_enabled(false);
        graph_.capture_begin();
        try {
          step_();
        } catch (...) {
          // End the capture before the error goes on: a stream left capturing fails every later
          // CUDA call with "operation not permitted when stream is capturing", hiding this error.
          try {
            graph_.capture_end();
          } catch (...) {
          }
          at::autocast::set_autocast_cache_enabled(cache);
          throw;
        }
        graph_.capture_end();
        at::autocast::set_autocast_cache_enabled(cache);
        captured_ = true;
      }
    }
    wait(current, side_);
    if (captured_) graph_.replay();  // the capture only recorded this batch's step: run it
  }

 private:
  std::function<void()> step_;
  int warmup_left_;
  bool captured_ = false;
  c10::cuda::CUDAStream side_ = c10::cuda::getStreamFromPool();
  at::cuda::CUDAGraph graph_;
};

}  // namespace

bool step_graphs_available(std::string& why_not) {
  if (!torch::cuda::is_available()) {
    why_not = "no CUDA device is available";
    return false;
  }
  return true;
}

std::unique_ptr<step_graph> capture_step_graph(std::function<void()> step, int warmup_calls) {
  return std::make_unique<captured_step>(std::move(step), warmup_calls);
}

int64_t cuda_free_memory() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  return static_cast<int64_t>(free);
}

}  // namespace det::harness
