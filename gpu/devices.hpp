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

/// NVIDIA GPUs visible through the node's CUDA driver (libcuda.so.1, loaded at run time, which
/// honours CUDA_VISIBLE_DEVICES); empty with no driver or no GPU (never throws).
std::vector<device> discover_cuda_devices();

/// The version code of the NCCL the dynamic loader finds (e.g. 22809 for 2.28.9); 0 when it finds
/// none.
int nccl_version();

}  // namespace det::gpu
