#include "gpu/cuda_step_graph.hpp"

#include <stdexcept>

namespace det::harness {

bool step_graphs_available(std::string& why_not) {
  why_not = "this build of det's torch trials has no CUDA graph step (its LibTorch has no CUDA, or it was built "
            "with DET_GPU_FAST_PATHS=OFF)";
  return false;
}

std::unique_ptr<step_graph> capture_step_graph(std::function<void()>, int) {
  throw std::logic_error("capture_step_graph called in a build without CUDA");
}

int64_t cuda_free_memory() { return 0; }

}  // namespace det::harness
