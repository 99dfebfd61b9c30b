#include "gpu/devices.hpp"

namespace det::gpu {

std::vector<device> discover_cuda_devices() { return {}; }

bool built_with_cuda() { return false; }

int nccl_version() { return 0; }

}  // namespace det::gpu
