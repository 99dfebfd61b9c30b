// All-reduce throughput: det's Gloo collective (det::harness::connect_gloo, what a distributed
// trial's gradients go through) against bare Gloo (gloo::allreduce on a context connected the same
// way) on the same float buffers: 2 processes (threads here) on 127.0.0.1, buffers of 1 MB (the
// first gradient bucket) and 25 MB (the others), interleaved rounds, median MB/s of each and their
// ratio. Beside them, det's shared-memory exchange (det::harness::join_shared_memory, what the
// workers of a run on one host use instead) on the same buffers, against the same bare Gloo.
//
// Usage: bench_allreduce [--rounds 9] [--repeats 20]

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu/collective.hpp"
#include "gpu/shared_memory_collective.hpp"

namespace {

// Runs `body(rank)` on two threads at once and returns the seconds the slower took.
template <class Body>
double on_two_ranks(Body body) {
  std::vector<double> seconds(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      auto start = std::chrono::steady_clock::now();
      body(rank);
      seconds[static_cast<size_t>(rank)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  for (auto& t : threads) t.join();
  return std::max(seconds[0], seconds[1]);
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 9, repeats = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  }
  // det's collectives, connected once, as a distributed run's workers are.
  det::harness::memory_rendezvous_store det_store;
  std::vector<std::unique_ptr<det::harness::collective>> det_peers(2);
  on_two_ranks([&](int rank) {
    det_peers[static_cast<size_t>(rank)] = det::harness::connect_gloo(
        rank, 2, det_store, "127.0.0.1", std::chrono::seconds(30), std::chrono::seconds(30));
  });
  det::harness::memory_rendezvous_store shm_store;
  std::vector<std::unique_ptr<det::harness::collective>> shm_peers(2);
  on_two_ranks([&](int rank) {
    shm_peers[static_cast<size_t>(rank)] =
        det::harness::join_shared_memory(rank, 2, shm_store, std::chrono::seconds(30), std::chrono::seconds(30));
  });
  if (!shm_peers[0] || !shm_peers[1]) {
    std::fprintf(stderr, "this host gave no shared-memory segment for the exchange\n");
    return 1;
  }
  // Bare Gloo: its own contexts over its own in-memory store.
  gloo::rendezvous::HashStore bare_store;
  std::vector<std::shared_ptr<gloo::rendezvous::Context>> bare(2);
  on_two_ranks([&](int rank) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, 2);
    auto device = gloo::transport::tcp::CreateDevice(attr);
    context->connectFullMesh(bare_store, device);
    bare[static_cast<size_t>(rank)] = context;
  });
  for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{25} << 20}) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<std::vector<float>> buffers(2, std::vector<float>(count, 1.0f));
    std::vector<double> det_rates, shm_rates, bare_rates;
    uint32_t tag = 1;
    for (int round = 0; round < rounds; ++round) {
      const double megabytes = static_cast<double>(bytes) * repeats / 1e6;
      det_rates.push_back(megabytes / on_two_ranks([&](int rank) {
        for (int r = 0; r < repeats; ++r) det_peers[static_cast<size_t>(rank)]->sum(buffers[static_cast<size_t>(rank)].data(), count);
      }));
      shm_rates.push_back(megabytes / on_two_ranks([&](int rank) {
        for (int r = 0; r < repeats; ++r) shm_peers[static_cast<size_t>(rank)]->sum(buffers[static_cast<size_t>(rank)].data(), count);
      }));
      const uint32_t first_tag = tag;
      tag += static_cast<uint32_t>(repeats);
      bare_rates.push_back(megabytes / on_two_ranks([&](int rank) {
        for (int r = 0; r < repeats; ++r) {
          gloo::AllreduceOptions options(bare[static_cast<size_t>(rank)]);
          options.setOutput(buffers[static_cast<size_t>(rank)].data(), count);
          options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          options.setTag(first_tag + static_cast<uint32_t>(r));
          gloo::allreduce(options);
        }
      }));
    }
    const double det_rate = median(det_rates), shm_rate = median(shm_rates), bare_rate = median(bare_rates);
    std::printf("all-reduce of %zu MB on 2 ranks, median of %d rounds of %d: det %.0f MB/s, bare Gloo %.0f MB/s, ratio %.2f; "
                "det shared memory %.0f MB/s, ratio to bare Gloo %.2f\n",
                bytes >> 20, rounds, repeats, det_rate, bare_rate, det_rate / bare_rate, shm_rate, shm_rate / bare_rate);
  }
  return 0;
}
