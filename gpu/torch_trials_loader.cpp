#include <dlfcn.h>
#include <limits.h>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "gpu/builtin_trials.hpp"

namespace det::harness {
namespace {

using entry_point = void (*)(const training_plan&, reporter&);

std::string executable_dir() {
  char buf[PATH_MAX];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return ".";
  std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}

entry_point load() {
  const std::string name = "libdet_torch_trials.so";
  const std::string dir = executable_dir();
  std::string tried;
  for (const auto& path : {dir + "/" + name, dir + "/../lib/det/" + name}) {
    // RTLD_GLOBAL: LibTorch's own plugins look up its symbols globally.
    if (void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      if (auto fn = reinterpret_cast<entry_point>(::dlsym(lib, "det_run_mlp_trial")))
        return fn;
      throw std::runtime_error(path + " has no det_run_mlp_trial; it belongs to another det build.");
    }
    tried += std::string("\n  ") + ::dlerror();
  }
  throw std::runtime_error("builtin:mlp needs LibTorch, but " + name + " could not be loaded:" +
                           tried);
}

} // namespace

void run_torch_trial(const training_plan& plan, reporter& out) {
  static std::once_flag once;
  static entry_point fn = nullptr;
  std::call_once(once, [] { fn = load(); });
  fn(plan, out);
}

} // namespace det::harness
