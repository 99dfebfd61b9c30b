#include "gpu/devices.hpp"

#include <cuda_runtime.h>
#if DET_WITH_NCCL
#include <nccl.h>
#endif

#include <cstdio>

namespace det::gpu {
namespace {

// Formats like nvidia-smi ("GPU-xxxxxxxx-xxxx-..."), so agents and operators see the same id.
std::string format_uuid(const cudaUUID_t& id) {
  const auto* b = reinterpret_cast<const unsigned char*>(id.bytes);
  char text[64];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return text;
}

}  // namespace

std::vector<device> discover_cuda_devices() {
  std::vector<device> found;
  // cudaGetDeviceCount leaves the count untouched on error (e.g. no driver), hence the 0.
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clears the sticky error so later CUDA calls start clean
    return found;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    found.push_back({i, props.name, static_cast<int64_t>(props.totalGlobalMem), format_uuid(props.uuid)});
  }
  return found;
}

bool built_with_cuda() { return true; }

int nccl_version() {
#if DET_WITH_NCCL
  int version = 0;
  return ncclGetVersion(&version) == ncclSuccess ? version : 0;
#else
  return 0;
#endif
}

}  // namespace det::gpu
