#pragma once
// The processes of one distributed run: a trial whose slots span several agents trains as one
// process per agent (per GPU slot on GPUs), each on its share of every batch, averaging gradients
// during or after each backward pass. On CPUs the sums travel over Gloo's TCP transport, on GPUs
// over NCCL (gpu/nccl_collective.hpp).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace det::harness {

class collective {
 public:
  virtual ~collective() = default;
  /// This process's place, 0 (the chief) to size() - 1.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Replaces `values` with their element-wise sum over every process. Every process must make
  /// the same calls, with the same counts, in the same order.
  virtual void sum(float* values, std::size_t count) = 0;
  virtual void sum(double* values, std::size_t count) = 0;
  /// Replaces `values` with their element-wise mean over every process. Gloo's are host memory;
  /// NCCL averages `values` where they are, on the host or on its GPU, so that gradients need not
  /// leave the device.
  virtual void average(float* values, std::size_t count) = 0;
  /// Replaces `values` with process 0's.
  virtual void broadcast(float* values, std::size_t count) = 0;
  /// Sums and broadcasts made so far.
  virtual std::uint64_t exchanges() const = 0;
};

/// Where the processes of a run find each other: keys every one of them reaches (the trial on the
/// master, for a worker).
class rendezvous_store {
 public:
  virtual ~rendezvous_store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  /// The value, or nothing yet.
  virtual std::optional<std::string> get(const std::string& key) = 0;
  /// The value once some process has set it; throws std::runtime_error with a sentence when none
  /// has within `timeout`.
  /// Inline: libdet_nccl.so, loaded into the worker, waits on the worker's store too.
  std::string await(const std::string& key, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::milliseconds(2);
    for (;;) {
      if (auto value = get(key)) return *value;
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("the other processes of the distributed run did not arrive within " +
                                 std::to_string(timeout.count() / 1000) + " s (no \"" + key + "\")");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
  }
};

/// A rendezvous in this process's memory, for processes that are threads of one (tests, benches).
class memory_rendezvous_store final : public rendezvous_store {
 public:
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    keys_[key] = value;
  }
  std::optional<std::string> get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = keys_.find(key);
    return it == keys_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> keys_;
};

/// Connects process `rank` of `size` to the others through Gloo: it listens on `hostname` (an
/// address the others can reach) and meets them through `store`. Throws std::runtime_error with a
/// sentence if they do not all arrive within `connect_timeout`; each later exchange may wait
/// `exchange_timeout` for the others.
std::unique_ptr<collective> connect_gloo(int rank, int size, rendezvous_store& store, const std::string& hostname,
                                         std::chrono::milliseconds connect_timeout,
                                         std::chrono::milliseconds exchange_timeout);

}  // namespace det::harness
