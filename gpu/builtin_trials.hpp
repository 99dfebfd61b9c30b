#pragma once
// The built-in trials behind `entrypoint = "builtin:NAME"`.

#include "gpu/harness.hpp"

namespace det::harness {

/// builtin:mlp: a LibTorch MLP on Fashion-MNIST or synthetic data (harness.cpp, the torch TU).
void run_mlp_trial(const training_plan& plan, reporter& out);

} // namespace det::harness
