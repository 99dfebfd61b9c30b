#pragma once
// Trials in shared libraries: builtin:mlp (in libdet_torch_trials.so, which links LibTorch and so
// is loaded only when needed) and users' plugins, both det::trial classes exported by DET_TRIAL.

#include "gpu/harness.hpp"

namespace det::harness {

/// builtin:mlp, builtin:cnn and builtin:gpt: loads libdet_torch_trials.so (once) from beside the
/// running binary, or from ../lib/det/ for an installed det, and trains its det_make_trial_NAME.
/// Throws std::runtime_error with a sentence if the library cannot be loaded.
bool run_torch_trial(const training_plan& plan, reporter& out);

/// Loads libdet_torch_trials.so (and so LibTorch) now, ahead of a run: a warm worker's start.
/// A library that cannot be loaded is left for the run, whose load names why.
void preload_torch_trials();

/// Loads libdet_torch_trials.so as a run would and checks that it was built against the LibTorch
/// it loads; empty when it was, else a sentence saying what is wrong and what to do.
std::string check_torch_trials();

/// entrypoint = "plugin:LIBRARY:CLASS": loads the library and trains its DET_TRIAL(CLASS).
bool run_plugin_trial(const training_plan& plan, reporter& out);

} // namespace det::harness
