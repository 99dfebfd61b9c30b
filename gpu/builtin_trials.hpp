#pragma once
// The built-in trials behind `entrypoint = "builtin:NAME"`.

#include "gpu/harness.hpp"

namespace det::harness {

/// builtin:mlp: a LibTorch MLP on Fashion-MNIST or synthetic data. Defined in harness.cpp,
/// inside libdet_torch_trials.so, which exports it as `det_run_mlp_trial`.
void run_mlp_trial(const training_plan& plan, reporter& out);

/// Loads libdet_torch_trials.so (once) from beside the running binary, or from
/// ../lib/det/ for an installed det, and runs builtin:mlp in it. Throws
/// std::runtime_error with a sentence if the library cannot be loaded.
void run_torch_trial(const training_plan& plan, reporter& out);

} // namespace det::harness
