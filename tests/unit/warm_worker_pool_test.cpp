// Which waiting worker a run is handed to, with shell scripts standing in for det-worker --warm:
// "preloading LibTorch" takes a while, then each says it is ready and reads its run.

#include "agent/warm_worker_pool.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using det::runtime::warm_preload;
using det::runtime::warm_worker_pool;

namespace {

// $1 is --preload=WHAT (the pool puts it before --title-room, which stays last).
std::vector<std::string> fake_worker(const std::string& libtorch_load_seconds) {
  const std::string script =
      "case \"$1\" in --preload=libtorch) sleep " + libtorch_load_seconds + ";; esac\n"
      "echo '" + std::string(det::runtime::warm_ready_line) + "'\n"
      "while IFS= read -r line; do [ \"$line\" = run ] && break; done\n"
      "echo \"handed a run after $1\"\n";
  return {"/bin/sh", "-c", script, "fake-det-worker", "--title-room=...................."};
}

// The lines a handed worker writes, and its exit; shared with the pool's reader threads.
struct run_output {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> lines;
  bool exited = false;

  static std::shared_ptr<run_output> handed(warm_worker_pool& pool, warm_preload wants,
                                            std::shared_ptr<det::runtime::child_process>& process) {
    auto out = std::make_shared<run_output>();
    process = pool.hand_over({{"--trial=1"}, {}}, wants,
                             [out](const std::string&, std::string line) {
                               std::lock_guard lock{out->mutex};
                               out->lines.push_back(std::move(line));
                               out->changed.notify_all();
                             },
                             [out](det::process::process_exit) {
                               std::lock_guard lock{out->mutex};
                               out->exited = true;
                               out->changed.notify_all();
                             });
    return out;
  }

  std::vector<std::string> lines_at_exit() {
    std::unique_lock lock{mutex};
    changed.wait_for(lock, std::chrono::seconds(20), [&] { return exited; });
    return lines;
  }
};

}  // namespace

TEST_CASE("warm workers: a run that needs no LibTorch is not handed to a worker still loading it; one that "
          "needs it is") {
  warm_worker_pool pool(fake_worker("2"), {}, 1);
  pool.fill();
  std::shared_ptr<det::runtime::child_process> process;
  run_output::handed(pool, warm_preload::nothing, process);
  CHECK_FALSE(process);  // a cold start is sooner
  auto out = run_output::handed(pool, warm_preload::libtorch, process);
  REQUIRE(process);
  CHECK(out->lines_at_exit() == std::vector<std::string>{"handed a run after --preload=libtorch"});
}

TEST_CASE("warm workers: a ready worker takes a run it did not preload for, and its successor preloads what "
          "that run wanted") {
  warm_worker_pool pool(fake_worker("0.1"), {}, 1);
  pool.fill();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // long enough to be ready
  std::shared_ptr<det::runtime::child_process> process;
  auto simulated = run_output::handed(pool, warm_preload::nothing, process);
  REQUIRE(process);
  CHECK(simulated->lines_at_exit() == std::vector<std::string>{"handed a run after --preload=libtorch"});
  pool.fill();
  // Not ready yet, but it loads nothing that a LibTorch run would have to wait for.
  auto with_libtorch = run_output::handed(pool, warm_preload::libtorch, process);
  REQUIRE(process);
  CHECK(with_libtorch->lines_at_exit() == std::vector<std::string>{"handed a run after --preload=nothing"});
}
