#pragma once
// NCCL between the processes of a distributed run on GPUs, one CUDA device each. The code that
// calls NCCL lives in libdet_torch_trials.so (built when CMake finds CUDA and NCCL), which the
// worker loads only for a GPU run: det-worker itself links neither.

#include "gpu/collective.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace det::harness {

/// What libdet_torch_trials.so exports when built with NCCL: connect_nccl's work, the collective
/// allocated with new.
using connect_nccl_function = collective* (*)(int rank, int size, int device, rendezvous_store& store,
                                              std::chrono::milliseconds connect_timeout,
                                              std::chrono::milliseconds exchange_timeout);
inline constexpr const char* connect_nccl_symbol = "det_connect_nccl";

/// The rendezvous key under which the chief publishes its ncclUniqueId, in hex.
inline constexpr const char* nccl_unique_id_key = "nccl-unique-id";

/// Connects process `rank` of `size` on CUDA device `device` to the others through NCCL: the
/// chief makes the ncclUniqueId and sets it in `store`, and every process joins the communicator
/// on its device, giving up (with a sentence) when the others do not within `connect_timeout`.
/// Sums, averages (ncclAvg) and broadcasts run on a stream of the collective's own, after what the
/// legacy default stream (LibTorch's current stream unless a trial sets another) queued before
/// them: in place on device memory, or on host memory through a device buffer. Each waits
/// at most `exchange_timeout`, polling ncclCommGetAsyncError: a dead or hung peer aborts the
/// communicator and throws std::runtime_error, which fails the run (restarted from its
/// checkpoint as any failed run). Throws std::runtime_error when this det was built without NCCL.
std::unique_ptr<collective> connect_nccl(int rank, int size, int device, rendezvous_store& store,
                                         std::chrono::milliseconds connect_timeout,
                                         std::chrono::milliseconds exchange_timeout);

/// `bytes` as lowercase hex (the unique id travels as text through the rendezvous). Inline: both
/// the worker and libdet_torch_trials.so use it.
inline std::string to_hex(const void* bytes, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    auto b = static_cast<const unsigned char*>(bytes)[i];
    text += digits[b >> 4];
    text += digits[b & 15];
  }
  return text;
}

/// What to_hex wrote, into `size` bytes. Throws std::runtime_error for any other text.
inline void from_hex(const std::string& text, void* bytes, std::size_t size) {
  auto value = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error("the NCCL id in the rendezvous is not hex");
  };
  if (text.size() != 2 * size)
    throw std::runtime_error("the NCCL id in the rendezvous has " + std::to_string(text.size() / 2) +
                             " bytes, not " + std::to_string(size));
  for (std::size_t i = 0; i < size; ++i)
    static_cast<unsigned char*>(bytes)[i] = static_cast<unsigned char>(value(text[2 * i]) * 16 + value(text[2 * i + 1]));
}

}  // namespace det::harness
