// The NCCL collective (gpu/nccl_collective.hpp), compiled into libdet_torch_trials.so when CMake
// finds CUDA and NCCL.
#include "gpu/nccl_collective.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <thread>

namespace det::harness {
namespace {

using clock_type = std::chrono::steady_clock;

void check_cuda(cudaError_t result, const std::string& what) {
  if (result != cudaSuccess) throw std::runtime_error(what + ": " + cudaGetErrorString(result));
}

std::string seconds(std::chrono::milliseconds timeout) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(timeout.count()) / 1000.0);
  return text;
}

// What an exchange does with the processes' values.
enum class exchange_kind : uint8_t { sum, average, broadcast };

class nccl_collective final : public collective {
 public:
  nccl_collective(ncclComm_t comm, int rank, int size, int device, std::chrono::milliseconds exchange_timeout)
      : comm_(comm), rank_(rank), size_(size), device_(device), timeout_(exchange_timeout) {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating NCCL's CUDA stream");
    check_cuda(cudaEventCreateWithFlags(&inputs_ready_, cudaEventDisableTiming), "creating a CUDA event");
    check_cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "creating a CUDA event");
  }
  ~nccl_collective() override {
    if (comm_) ncclCommDestroy(comm_);
    if (staging_) cudaFree(staging_);
    cudaEventDestroy(done_);
    cudaEventDestroy(inputs_ready_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::uint64_t exchanges() const override { return exchanges_; }
  void sum(float* values, std::size_t count) override { exchange(values, count, ncclFloat, exchange_kind::sum); }
  void sum(double* values, std::size_t count) override { exchange(values, count, ncclDouble, exchange_kind::sum); }
  void average(float* values, std::size_t count) override {
    exchange(values, count, ncclFloat, exchange_kind::average);
  }
  void broadcast(float* values, std::size_t count) override {
    exchange(values, count, ncclFloat, exchange_kind::broadcast);
  }

 private:
  // On a stream of its own, so that an exchange runs beside the kernels that the backward pass
  // queues meanwhile on the legacy default stream (LibTorch's), as DDP's NCCL stream does; it
  // starts once what that stream had queued when it was called (the gradients' copies into
  // `values`) is done. NCCL's ncclAvg averages on the GPU: device memory never leaves it.
  template <class T>
  void exchange(T* values, std::size_t count, ncclDataType_t type, exchange_kind kind) {
    if (count == 0) return;
    if (!comm_) throw std::runtime_error("the NCCL communicator was aborted after an earlier failure");
    check_cuda(cudaSetDevice(device_), "selecting CUDA device " + std::to_string(device_));
    const std::size_t bytes = count * sizeof(T);
    void* buffer = values;
    // Pinned host memory, too, may still be being written by the legacy stream.
    check_cuda(cudaEventRecord(inputs_ready_, cudaStreamLegacy), "marking the exchange's inputs");
    check_cuda(cudaStreamWaitEvent(stream_, inputs_ready_, 0), "ordering the exchange after its inputs");
    const bool on_host = !on_device(values);
    if (on_host) {
      reserve(bytes);
      check_cuda(cudaMemcpyAsync(staging_, values, bytes, cudaMemcpyHostToDevice, stream_), "copying to the GPU");
      buffer = staging_;
    }
    const auto deadline = clock_type::now() + timeout_;
    settle(kind == exchange_kind::broadcast
               ? ncclBroadcast(buffer, buffer, count, type, 0, comm_, stream_)
               : ncclAllReduce(buffer, buffer, count, type, kind == exchange_kind::average ? ncclAvg : ncclSum,
                               comm_, stream_),
           deadline);
    check_cuda(cudaEventRecord(done_, stream_), "marking the exchange's end");
    // Waited for before the copy back: a copy into pageable host memory blocks until it is done,
    // which behind an exchange with a dead peer would be for ever.
    wait_until_done(deadline);
    if (on_host) check_cuda(cudaMemcpy(values, staging_, bytes, cudaMemcpyDeviceToHost), "copying from the GPU");
    ++exchanges_;
  }

  static bool on_device(const void* p) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();  // a plain host pointer on older runtimes
      return false;
    }
    return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  }

  void reserve(std::size_t bytes) {
    if (bytes <= staging_bytes_) return;
    if (staging_) cudaFree(staging_);
    staging_ = nullptr;
    check_cuda(cudaMalloc(&staging_, bytes), "allocating " + std::to_string(bytes) + " bytes on the GPU");
    staging_bytes_ = bytes;
  }

  // A non-blocking communicator answers ncclInProgress until the call has been enqueued.
  void settle(ncclResult_t result, clock_type::time_point deadline) {
    while (result == ncclInProgress) {
      fail_after(deadline);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      ncclCommGetAsyncError(comm_, &result);
    }
    if (result != ncclSuccess) fail(std::string("NCCL failed: ") + ncclGetErrorString(result));
  }

  // Done when the exchange's event is; a peer that died or hangs shows as an asynchronous error
  // or as time.
  void wait_until_done(clock_type::time_point deadline) {
    for (;;) {
      auto done = cudaEventQuery(done_);
      if (done == cudaSuccess) return;
      if (done != cudaErrorNotReady) fail(std::string("the GPU failed during an NCCL exchange: ") + cudaGetErrorString(done));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        fail(std::string("NCCL failed during an exchange (a peer may have died): ") + ncclGetErrorString(async));
      fail_after(deadline);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  void fail_after(clock_type::time_point deadline) {
    if (clock_type::now() > deadline)
      fail("process " + std::to_string(rank_) + " of " + std::to_string(size_) + " waited more than " +
           seconds(timeout_) + " for the others in an NCCL exchange: a peer is dead or hung");
  }

  [[noreturn]] void fail(const std::string& sentence) {
    ncclCommAbort(comm_);  // frees the kernels a dead peer left waiting
    comm_ = nullptr;
    throw std::runtime_error(sentence);
  }

  ncclComm_t comm_;
  int rank_;
  int size_;
  int device_;
  std::chrono::milliseconds timeout_;
  cudaStream_t stream_ = nullptr;  // the exchanges'
  cudaEvent_t inputs_ready_ = nullptr;
  cudaEvent_t done_ = nullptr;
  void* staging_ = nullptr;
  std::size_t staging_bytes_ = 0;
  std::uint64_t exchanges_ = 0;
};

// connect_nccl's work (the worker's connect_nccl loads this library and calls it).
std::unique_ptr<collective> join_nccl(int rank, int size, int device, rendezvous_store& store,
                                      std::chrono::milliseconds connect_timeout,
                                      std::chrono::milliseconds exchange_timeout) {
  const std::string who = "process " + std::to_string(rank) + " of " + std::to_string(size);
  check_cuda(cudaSetDevice(device), who + " cannot use CUDA device " + std::to_string(device));
  ncclUniqueId id;
  if (rank == 0) {
    auto made = ncclGetUniqueId(&id);
    if (made != ncclSuccess) throw std::runtime_error(who + " cannot make an NCCL id: " + ncclGetErrorString(made));
    store.set(nccl_unique_id_key, to_hex(&id, sizeof id));
  } else {
    from_hex(store.await(nccl_unique_id_key, connect_timeout), &id, sizeof id);
  }
  // Non-blocking, so that peers that never come cannot hold this process for ever.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  auto result = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  const auto deadline = clock_type::now() + connect_timeout;
  while (result == ncclInProgress && clock_type::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ncclCommGetAsyncError(comm, &result);
  }
  if (result != ncclSuccess) {
    if (comm) ncclCommAbort(comm);
    throw std::runtime_error(who + " could not join the NCCL communicator on CUDA device " + std::to_string(device) +
                             ": " + (result == ncclInProgress ? "the others did not arrive within " + seconds(connect_timeout)
                                                              : std::string(ncclGetErrorString(result))));
  }
  return std::make_unique<nccl_collective>(comm, rank, size, device, exchange_timeout);
}

}  // namespace
}  // namespace det::harness

// What the worker looks up in this library (gpu/nccl_collective.hpp, connect_nccl_function).
extern "C" det::harness::collective* det_connect_nccl(int rank, int size, int device,
                                                      det::harness::rendezvous_store& store,
                                                      std::chrono::milliseconds connect_timeout,
                                                      std::chrono::milliseconds exchange_timeout) {
  return det::harness::join_nccl(rank, size, device, store, connect_timeout, exchange_timeout).release();
}
