// det-worker: one run of one trial, started by an agent. A binary of its own,
// linked with only what a worker needs: agents start one per trial run, and
// the dynamic linking of det-node's libraries (PostgreSQL, HTTP, TLS, CUDA)
// would cost every run tens of milliseconds of CPU.

#include <iostream>

#include <CLI/CLI.hpp>

#include "runtime/node.hpp"

int main(int argc, char** argv) {
  CLI::App app{"det-worker: trains one trial for the master (agents start it)"};
  det::runtime::worker_options w;
  app.add_option("--master", w.master, "the master's HOST:PORT (actor port)")->required();
  app.add_option("--allocation", w.allocation_id, "allocation id")->required();
  app.add_option("--trial", w.trial_id, "trial id")->required()->check(CLI::PositiveNumber);
  app.add_option("--rank", w.rank, "this worker's place in a run on several agents (0: the chief)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--world-size", w.world_size, "how many workers train the run together")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    return det::runtime::run_worker(w);
  } catch (const std::exception& e) {
    std::cerr << "det-worker: " << e.what() << std::endl;
    return 1;
  }
}
