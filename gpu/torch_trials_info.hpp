#pragma once
// What libdet_torch_trials.so says of the LibTorch it was built against and the one it loaded, so
// that a worker (and an agent, through det-worker --check-torch-trials) can tell a library built
// for another LibTorch. Plain C exports: read with dlsym before anything of torch is called.

/// "LibTorch VERSION at PATH", PATH the libtorch_cpu.so it was linked against (resolved).
extern "C" const char* det_torch_trials_built_for();
/// The resolved path of the libtorch_cpu.so this process loaded for it.
extern "C" const char* det_torch_trials_loaded_torch();
/// The resolved path of the libtorch_cpu.so it was linked against.
extern "C" const char* det_torch_trials_built_torch();
