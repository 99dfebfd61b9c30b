#include "gpu/cuda_device_name.hpp"

#include <dlfcn.h>

namespace det::harness {

std::string cuda_device_name(int ordinal) {
  // The driver API's C functions (cuda.h), typed here: CUresult is an int and CUdevice an int.
  using init_function = int (*)(unsigned flags);
  using device_function = int (*)(int* device, int ordinal);
  using name_function = int (*)(char* name, int length, int device);
  // Kept loaded: LibTorch has the driver mapped already on a GPU.
  static void* const driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return "";
  auto init = reinterpret_cast<init_function>(::dlsym(driver, "cuInit"));
  auto device_of = reinterpret_cast<device_function>(::dlsym(driver, "cuDeviceGet"));
  auto name_of = reinterpret_cast<name_function>(::dlsym(driver, "cuDeviceGetName"));
  int device = 0;
  char name[256] = {};
  if (!init || !device_of || !name_of || init(0) != 0 || device_of(&device, ordinal) != 0 ||
      name_of(name, static_cast<int>(sizeof name - 1), device) != 0)
    return "";
  return name;
}

}  // namespace det::harness
