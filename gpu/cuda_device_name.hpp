#pragma once
// The name of a CUDA device ("NVIDIA H100 80GB HBM3"), read from the CUDA driver through dlopen,
// so that libdet_torch_trials links no CUDA library of its own (gpu/devices.hpp's discovery lives
// in det_gpu, which the worker links). The driver honours CUDA_VISIBLE_DEVICES, as LibTorch does.

#include <string>

namespace det::harness {

/// The name of visible CUDA device `ordinal`; "" without a driver or such a device (never throws).
std::string cuda_device_name(int ordinal);

}  // namespace det::harness
