#include "gpu/torch_trials_info.hpp"

#include <ATen/Context.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <string>

extern "C" const char* det_torch_trials_built_torch() { return DET_BUILT_LIBTORCH; }

extern "C" const char* det_torch_trials_built_for() {
  static const std::string text = std::string("LibTorch ") + DET_BUILT_TORCH_VERSION + " at " + DET_BUILT_LIBTORCH;
  return text.c_str();
}

extern "C" const char* det_torch_trials_loaded_torch() {
  static const std::string path = [] {
    Dl_info info{};
    // at::globalContext is defined in libtorch_cpu.so: the library that holds it is the one loaded.
    if (!::dladdr(reinterpret_cast<void*>(&at::globalContext), &info) || !info.dli_fname) return std::string();
    char resolved[PATH_MAX];
    return std::string(::realpath(info.dli_fname, resolved) ? resolved : info.dli_fname);
  }();
  return path.c_str();
}
