#pragma once
// Mixed precision for the built-in trials: autocast to bfloat16 on a GPU, which needs no loss
// scaling (float16 would, and LibTorch has no GradScaler). LibTorch 2.4 renamed autocast's
// switches, hence the version test. Internal to det_harness, like mlp_model.hpp.

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace det::harness {

/// Autocasts CUDA operations to bfloat16 while it lives, if `enabled`.
class cuda_autocast {
 public:
  explicit cuda_autocast(bool enabled) : enabled_(enabled) {
    if (enabled_) set(true);
  }
  ~cuda_autocast() {
    if (!enabled_) return;
    set(false);
    at::autocast::clear_cache();
  }
  cuda_autocast(const cuda_autocast&) = delete;
  cuda_autocast& operator=(const cuda_autocast&) = delete;

 private:
  static void set(bool on) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, on);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(on);
#endif
  }

  bool enabled_;
};

}  // namespace det::harness
