#include <dlfcn.h>
#include <limits.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <utility>

#include "det/trial.hpp"
#include "gpu/builtin_trials.hpp"
#include "gpu/nccl_collective.hpp"
#include "gpu/torch_trials_info.hpp"
#include "gpu/trial_loop.hpp"

namespace det::harness {
namespace {

std::string executable_dir() {
  char buf[PATH_MAX];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return ".";
  std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// Libraries stay loaded for the process's life: a worker trains one run.
// RTLD_GLOBAL: LibTorch's own plugins look up its symbols globally, and a trial's
// det::invalid_hyperparameters thrown there must be the type the worker catches.
void* open_library(const std::string& path, std::string& error) {
  if (void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL))
    return lib;
  error = ::dlerror();
  return nullptr;
}

det::trial_factory find_factory(void* lib, const std::string& library, const std::string& name) {
  auto symbol = "det_make_trial_" + name;
  if (auto fn = reinterpret_cast<det::trial_factory>(::dlsym(lib, symbol.c_str())))
    return fn;
  throw std::runtime_error(library + " exports no trial named " + name +
                           ": define the class there and add DET_TRIAL(" + name + ").");
}

// A plugin built against another Trial API disagrees with det on the classes they share: refused
// before det calls into it. libdet_torch_trials.so is built with det, so only plugins are checked.
void check_api_version(void* lib, const std::string& library, const std::string& name) {
  auto symbol = "det_trial_api_version_" + name;
  auto fn = reinterpret_cast<det::trial_api_version_function>(::dlsym(lib, symbol.c_str()));
  int version = fn ? fn() : 0;  // plugins from before DET_TRIAL exported a version count as 0
  if (fn && version == DET_TRIAL_API_VERSION)
    return;
  throw std::runtime_error("The trial library " + library + " was built against Trial API version " +
                           std::to_string(version) + (fn ? "" : " (none exported)") + "; this det needs version " +
                           std::to_string(DET_TRIAL_API_VERSION) +
                           ": rebuild it against this det's include/det/trial.hpp.");
}

bool train(det::trial_factory make, const std::string& format, const training_plan& plan, reporter& out) {
  step_timings timings(plan.profiling);
  auto context = make_trial_context(plan, out, timings);
  std::unique_ptr<det::trial> t(make(*context));
  return run_trial_loop(*t, plan, out, format, timings);
}

// A library of det's, from beside the running binary or the installed lib/det; `needed_for` names
// what needs it when it cannot be loaded.
std::pair<void*, std::string> det_library(const std::string& name, const std::string& needed_for) {
  const std::string dir = executable_dir();
  std::string tried, error;
  for (const auto& path : {dir + "/" + name, dir + "/../lib/det/" + name}) {
    if (void* lib = open_library(path, error))
      return {lib, path};
    tried += "\n  " + error;
  }
  if (tried.find("undefined symbol") != std::string::npos)
    tried += "\n(an undefined symbol: it was built against another LibTorch than the one this node loads; rebuild "
             "it here with scripts/build-torch-trials.sh)";
  else if (tried.find(name + ": cannot open shared object file") != std::string::npos)
    tried += "\n(det's archive carries no LibTorch trials: build them for this node's LibTorch with "
             "scripts/build-torch-trials.sh)";
  throw std::runtime_error(needed_for + ", but " + name + " could not be loaded:" + tried);
}

} // namespace

bool run_torch_trial(const training_plan& plan, reporter& out) {
  const std::string trial = plan.trial_name;
  auto [lib, path] = det_library("libdet_torch_trials.so", "builtin:" + trial + " needs LibTorch");
  return train(find_factory(lib, path, trial), "det." + trial + "/2", plan, out);
}

std::string check_torch_trials() {
  try {
    auto [lib, path] = det_library("libdet_torch_trials.so", "LibTorch trials");
    using text_function = const char* (*)();
    auto built = reinterpret_cast<text_function>(::dlsym(lib, "det_torch_trials_built_torch"));
    auto loaded = reinterpret_cast<text_function>(::dlsym(lib, "det_torch_trials_loaded_torch"));
    auto built_for = reinterpret_cast<text_function>(::dlsym(lib, "det_torch_trials_built_for"));
    if (!built || !loaded || !built_for)
      return path + " says nothing of the LibTorch it was built for: it is from an older det; rebuild it with "
                    "scripts/build-torch-trials.sh.";
    // The same file, or two copies of it: only the build's own libtorch_cpu.so is known to fit.
    if (std::string(built()) != loaded())
      return path + " was built for " + built_for() + ", but this node loads " + loaded() +
             ": rebuild it here with scripts/build-torch-trials.sh.";
    return {};
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

void preload_torch_trials() {
  try {
    det_library("libdet_torch_trials.so", "LibTorch");
  } catch (const std::runtime_error&) {
    // The run that needs it loads it again and says why it cannot.
  }
}

std::unique_ptr<collective> connect_nccl(int rank, int size, int device, rendezvous_store& store,
                                         std::chrono::milliseconds connect_timeout,
                                         std::chrono::milliseconds exchange_timeout) {
  // Built only where CMake found CUDA and NCCL; loaded only here, so a CPU run never maps them.
  auto [lib, path] = det_library("libdet_nccl.so", "a distributed run on GPUs needs NCCL (this det is built "
                                                    "with it where CMake finds CUDA and NCCL under /usr/local/cuda)");
  auto join = reinterpret_cast<connect_nccl_function>(::dlsym(lib, connect_nccl_symbol));
  if (!join) throw std::runtime_error(path + " exports no " + connect_nccl_symbol);
  return std::unique_ptr<collective>(join(rank, size, device, store, connect_timeout, exchange_timeout));
}

bool run_plugin_trial(const training_plan& plan, reporter& out) {
  std::string error;
  void* lib = open_library(plan.plugin_library, error);
  if (!lib)
    throw std::runtime_error("The trial library " + plan.plugin_library + " cannot be loaded: " + error);
  auto factory = find_factory(lib, plan.plugin_library, plan.plugin_class);
  check_api_version(lib, plan.plugin_library, plan.plugin_class);
  return train(factory, "det.plugin." + plan.plugin_class + "/1", plan, out);
}

} // namespace det::harness
