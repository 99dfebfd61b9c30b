#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace det::gpu {

struct device {
  int index = 0;
  std::string name;
  int64_t memory_bytes = 0;
  std::string uuid;
};

/// NVIDIA GPUs visible through the CUDA runtime; empty when built without CUDA, with no driver, or
/// no GPU (never throws).
std::vector<device> discover_cuda_devices();

bool built_with_cuda();

/// NCCL's version code (e.g. 22809 for 2.28.9); 0 when built without NCCL.
int nccl_version();

}  // namespace det::gpu
