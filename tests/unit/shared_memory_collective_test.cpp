// The shared-memory exchange of a distributed run's processes on one host
// (gpu/shared_memory_collective.hpp), with processes that are threads here: each maps the segment
// through its own file descriptor, as a process would.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "gpu/shared_memory_collective.hpp"

namespace {

using det::harness::collective;
using namespace std::chrono_literals;

// Runs `body(rank, peers)` for `size` processes joined through one store; returns each one's error.
std::vector<std::string> run_joined(det::harness::rendezvous_store& store, int size,
                                    const std::function<void(int, collective&)>& body,
                                    std::chrono::milliseconds exchange_timeout = 30s) {
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank)
    threads.emplace_back([&, rank] {
      try {
        auto peers = det::harness::join_shared_memory(rank, size, store, 30s, exchange_timeout);
        if (!peers) throw std::runtime_error("no shared memory");
        body(rank, *peers);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(rank)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

// Whether the segment the chief named in `store` is still in /dev/shm.
bool segment_left(det::harness::rendezvous_store& store) {
  auto where = store.get("shared-memory/segment");
  REQUIRE(where);
  return std::filesystem::exists("/dev/shm" + where->substr(0, where->find(' ')));
}

}  // namespace

TEST_CASE("processes on one host sum, average and broadcast through shared memory, in several chunks") {
  const int size = 3;
  // More than the 4 MB a process places at a time, and not a multiple of anything.
  const std::size_t count = 2'500'017;
  std::vector<std::vector<float>> averaged(size), broadcast(size);
  std::vector<std::vector<double>> summed(size);
  std::vector<std::uint64_t> exchanges(size);
  det::harness::memory_rendezvous_store store;
  auto errors = run_joined(store, size, [&](int rank, collective& peers) {
    CHECK(peers.rank() == rank);
    CHECK(peers.size() == size);
    auto& mean = averaged[static_cast<size_t>(rank)];
    for (std::size_t i = 0; i < count; ++i) mean.push_back(static_cast<float>(i % 1000) * 0.1f + static_cast<float>(rank));
    peers.average(mean.data(), count);
    auto& sum = summed[static_cast<size_t>(rank)];
    sum.assign(1'000'003, static_cast<double>(rank + 1));
    peers.sum(sum.data(), sum.size());
    auto& root = broadcast[static_cast<size_t>(rank)];
    root.assign(count, static_cast<float>(rank) - 7.0f);
    peers.broadcast(root.data(), count);
    float stop = rank == 2 ? 1.0f : 0.0f;  // one value: two of the three parts are empty
    peers.sum(&stop, 1);
    CHECK(stop == 1.0f);
    exchanges[static_cast<size_t>(rank)] = peers.exchanges();
  });
  for (const auto& e : errors) REQUIRE(e == "");
  for (int rank = 0; rank < size; ++rank) {
    const auto& mean = averaged[static_cast<size_t>(rank)];
    for (std::size_t i : {std::size_t{0}, std::size_t{999}, std::size_t{1'048'576}, count - 1})
      CHECK(mean[i] == doctest::Approx(static_cast<float>(i % 1000) * 0.1f + 1.0f).epsilon(1e-6));
    // Every value is combined once, so every process has the same bits.
    CHECK(std::memcmp(mean.data(), averaged[0].data(), count * sizeof(float)) == 0);
    CHECK(summed[static_cast<size_t>(rank)].front() == 6.0);
    CHECK(summed[static_cast<size_t>(rank)].back() == 6.0);
    CHECK(broadcast[static_cast<size_t>(rank)][count / 2] == -7.0f);
    CHECK(broadcast[static_cast<size_t>(rank)].back() == -7.0f);
    CHECK(exchanges[static_cast<size_t>(rank)] == 4);
  }
  // The segment's name went once every process had mapped it: nothing stays behind in /dev/shm.
  CHECK_FALSE(segment_left(store));
}

TEST_CASE("an exchange fails with a sentence soon after another process has ended, not at the deadline") {
  std::atomic<bool> second_gone{false};
  auto start = std::chrono::steady_clock::now();
  double waited = 0;
  det::harness::memory_rendezvous_store store;
  auto errors = run_joined(
      store, 2,
      [&](int rank, collective& peers) {
        std::vector<float> values(1000, 1.0f);
        peers.sum(values.data(), values.size());
        if (rank == 1) {
          second_gone = true;
          return;  // its collective goes with it, as a killed process's would
        }
        while (!second_gone) std::this_thread::sleep_for(1ms);
        start = std::chrono::steady_clock::now();
        try {
          peers.sum(values.data(), values.size());
        } catch (...) {
          waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          throw;
        }
      },
      std::chrono::milliseconds(600'000));
  CHECK(errors[0] == "an exchange with the trial's other processes failed: process 1 of 2 has ended");
  CHECK(errors[1] == "");
  CHECK(waited < 5.0);
}

TEST_CASE("a process that cannot map the segment makes every process fall back, and the segment goes") {
  det::harness::memory_rendezvous_store store;
  std::unique_ptr<collective> chief;
  std::thread first([&] { chief = det::harness::join_shared_memory(0, 2, store, 30s, 30s); });
  // The second process, on another host: it answers that it could not map the segment.
  auto where = store.await("shared-memory/segment", 30s);
  CHECK(where.rfind("/det-collective-", 0) == 0);
  store.set("shared-memory/1", "not mapped");
  first.join();
  CHECK(chief == nullptr);
  CHECK_FALSE(segment_left(store));

  // And a process that is told of a segment it cannot find answers so.
  det::harness::memory_rendezvous_store elsewhere;
  elsewhere.set("shared-memory/segment", "/det-collective-on-another-host 1234");
  std::thread second([&] { CHECK(det::harness::join_shared_memory(1, 2, elsewhere, 30s, 30s) == nullptr); });
  CHECK(elsewhere.await("shared-memory/1", 30s) == "not mapped");
  second.join();
}

TEST_CASE("processes that never come are an error naming the wait") {
  det::harness::memory_rendezvous_store store;
  CHECK_THROWS_WITH_AS(det::harness::join_shared_memory(0, 2, store, 1s, 1s), doctest::Contains("did not arrive within 1 s"),
                       std::runtime_error);
  CHECK_FALSE(segment_left(store));
}

TEST_CASE("a segment whose chief was killed before every process mapped it is removed by the next chief") {
  // A pid that no process has: a child's, once it has been waited for.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  REQUIRE(gone > 0);
  waitpid(gone, nullptr, 0);
  const auto abandoned = "/dev/shm/det-collective-" + std::to_string(gone) + "-0123456789abcdef";
  const auto mine = "/dev/shm/det-collective-" + std::to_string(getpid()) + "-not-abandoned";
  std::ofstream(abandoned) << "left behind";
  std::ofstream(mine) << "in use";
  det::harness::memory_rendezvous_store store;
  auto errors = run_joined(store, 2, [](int, collective&) {});
  CHECK(errors == std::vector<std::string>{"", ""});
  CHECK_FALSE(std::filesystem::exists(abandoned));
  CHECK(std::filesystem::exists(mine));  // its creator lives
  std::filesystem::remove(mine);
}

TEST_CASE("a process told DET_SHM_DISABLE=1 declines, and every process falls back") {
  setenv("DET_SHM_DISABLE", "1", 1);
  det::harness::memory_rendezvous_store store;
  std::vector<bool> joined(2, true);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      joined[static_cast<size_t>(rank)] = det::harness::join_shared_memory(rank, 2, store, 30s, 30s) != nullptr;
    });
  for (auto& t : threads) t.join();
  unsetenv("DET_SHM_DISABLE");
  CHECK(joined == std::vector<bool>{false, false});
  CHECK(store.get("shared-memory/segment") == std::optional<std::string>("none"));
}
