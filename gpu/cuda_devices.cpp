#include "gpu/devices.hpp"

#include <dlfcn.h>

#include <cstdio>

// The CUDA driver and NCCL are the node's, found at run time: det-node links neither, so one
// build (and one portable archive) runs on machines with and without NVIDIA's libraries, and
// agents on GPU nodes find whatever driver the node has. The driver API needs no CUDA headers;
// its few signatures are declared here, as NVIDIA's cuda.h has them.

namespace det::gpu {
namespace {

using cu_result = int;  // CUresult: 0 is CUDA_SUCCESS
using cu_device = int;  // CUdevice
struct cu_uuid {
  unsigned char bytes[16];
};

// Formats like nvidia-smi ("GPU-xxxxxxxx-xxxx-..."), so agents and operators see the same id.
std::string format_uuid(const cu_uuid& id) {
  const unsigned char* b = id.bytes;
  char text[64];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return text;
}

// The driver library stays loaded once found (dlclose would only make the next call reload it).
void* load(const char* name) { return ::dlopen(name, RTLD_NOW | RTLD_LOCAL); }

template <class F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

}  // namespace

std::vector<device> discover_cuda_devices() {
  std::vector<device> found;
  void* cuda = load("libcuda.so.1");
  if (!cuda) return found;  // no NVIDIA driver on this node
  auto init = symbol<cu_result (*)(unsigned)>(cuda, "cuInit");
  auto count_devices = symbol<cu_result (*)(int*)>(cuda, "cuDeviceGetCount");
  auto get = symbol<cu_result (*)(cu_device*, int)>(cuda, "cuDeviceGet");
  auto name_of = symbol<cu_result (*)(char*, int, cu_device)>(cuda, "cuDeviceGetName");
  auto memory_of = symbol<cu_result (*)(std::size_t*, cu_device)>(cuda, "cuDeviceTotalMem_v2");
  auto uuid_of = symbol<cu_result (*)(cu_uuid*, cu_device)>(cuda, "cuDeviceGetUuid");
  int count = 0;
  if (!init || !count_devices || !get || !name_of || !memory_of || init(0) != 0 || count_devices(&count) != 0)
    return found;
  for (int i = 0; i < count; ++i) {
    cu_device handle = 0;
    char name[256] = {};
    std::size_t memory = 0;
    if (get(&handle, i) != 0 || name_of(name, sizeof name - 1, handle) != 0 || memory_of(&memory, handle) != 0)
      continue;
    cu_uuid uuid{};
    const bool has_uuid = uuid_of && uuid_of(&uuid, handle) == 0;
    found.push_back({i, name, static_cast<int64_t>(memory), has_uuid ? format_uuid(uuid) : std::string{}});
  }
  return found;
}

int nccl_version() {
  void* nccl = load("libnccl.so.2");
  if (!nccl) return 0;
  auto get_version = symbol<int (*)(int*)>(nccl, "ncclGetVersion");  // ncclResult_t: 0 is ncclSuccess
  int version = 0;
  return get_version && get_version(&version) == 0 ? version : 0;
}

}  // namespace det::gpu
