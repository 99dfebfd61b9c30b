#pragma once
// A Core API trial run by the worker: its entrypoint as a child process in the run's working
// directory, with the trial's settings in its environment and the machine sampled meanwhile.

#include <atomic>

namespace det::config {
struct experiment_config;
}

namespace det::pb {
class TrialSpec;
class WorkerExit;
}

namespace det::runtime {

class worker_connection;

/// A Core API trial: the entrypoint runs as a child process in a working directory holding the
/// experiment's model definition; it talks to the master's REST API itself. Once `stop` is set
/// the process is asked to stop. How it ended goes into `exit`.
void run_core_api_trial(worker_connection& link, const pb::TrialSpec& spec, const config::experiment_config& cfg,
                        const std::atomic<bool>& stop, pb::WorkerExit& exit);

} // namespace det::runtime
