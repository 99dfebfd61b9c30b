#pragma once
// Warm workers: det-worker processes an agent starts before their runs (det-worker --warm), which
// load what their --preload says (LibTorch and det's trial libraries, or nothing more), connect to
// the master, and then wait on their stdin for the run they are handed (node/run_handover.hpp).
// Each still trains exactly one run in a process of its own, with the run's environment and
// arguments; only the start-up (the process, its actor system and connection, and LibTorch's
// 0.75 s of loading where preloaded) is taken off the run's critical path.

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/child_process.hpp"
#include "node/run_handover.hpp"

namespace det::runtime {

/// An agent's warm workers: started by fill() (on the agent's thread, which they die with, as cold
/// workers do), handed a run by hand_over(). Not thread-safe: the agent's actor owns it.
class warm_worker_pool {
 public:
  /// `argv`: det-worker, --master=HOST:PORT, --warm and, last, --title-room; `env`: what the
  /// workers' connections need before their runs (the agent's TLS files); `size`: how many to keep
  /// waiting (0: none). The first ones preload LibTorch.
  warm_worker_pool(std::vector<std::string> argv, std::map<std::string, std::string> env, std::size_t size);
  ~warm_worker_pool();
  warm_worker_pool(const warm_worker_pool&) = delete;
  warm_worker_pool& operator=(const warm_worker_pool&) = delete;

  /// Starts workers until `size` wait, preloading what the last run handed over wanted (an
  /// agent's runs are mostly alike); a worker that cannot be started is reported on stderr.
  void fill();
  /// A waiting worker, handed `run`: its output and exit go to the handlers from now on (lines it
  /// wrote while it waited went to the agent's stderr). Rather one that is ready (it wrote
  /// warm_ready_line) and preloaded what `run` wants; one still starting only where finishing its
  /// start takes no longer than a cold start (not one loading LibTorch for a run that needs none).
  /// nullptr when none fits: start one cold.
  std::shared_ptr<child_process> hand_over(const run_handover& run, warm_preload wants,
                                           child_process::line_handler on_line, child_process::exit_handler on_exit);

 private:
  struct owner;  // whose a waiting worker's output and exit are: the agent's, then its run's
  struct waiting_worker {
    std::shared_ptr<child_process> process;
    int handover_fd;  // the write end of its stdin
    std::shared_ptr<owner> owned_by;
    warm_preload preloaded;
  };
  std::vector<std::string> argv_;
  std::map<std::string, std::string> env_;
  std::size_t size_;
  warm_preload next_preload_ = warm_preload::libtorch;
  std::deque<waiting_worker> waiting_;
};

} // namespace det::runtime
