#pragma once
// A Core API trial run by the worker: its entrypoint as a child process in the run's working
// directory, with the trial's settings in its environment and the machine sampled meanwhile.

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace det::config {
struct experiment_config;
}

namespace det::pb {
class TrialSpec;
class WorkerExit;
}

namespace det::runtime {

class worker_connection;

/// Where a worker's container is among its run's: a run whose slots span agents has one worker
/// on each (Determined's launcher model), and each runs the entrypoint once.
struct container_place {
  int rank = 0;                        // 0: the chief
  std::vector<std::string> addresses;  // every container's address, by rank
};

/// A Core API trial: the entrypoint runs as a child process in a working directory holding the
/// experiment's model definition; it talks to the master's REST API itself, and learns its place
/// from DET_CONTAINER_RANK and DET_CONTAINER_ADDRS. Once `stop` is set the process is asked to
/// stop. How it ended goes into `exit`.
void run_core_api_trial(worker_connection& link, const pb::TrialSpec& spec, const config::experiment_config& cfg,
                        const container_place& place, const std::atomic<bool>& stop, pb::WorkerExit& exit);

/// The addresses of a run's `size` containers, by rank, each worker telling its own through the
/// trial's rendezvous on the master. Throws std::runtime_error with a sentence when the others do
/// not arrive within `timeout`.
std::vector<std::string> container_addresses(worker_connection& link, const std::string& allocation_id, int rank,
                                             int size, const std::string& own_address,
                                             std::chrono::milliseconds timeout);

} // namespace det::runtime
