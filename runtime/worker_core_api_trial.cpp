// A Core API trial run by the worker (worker_core_api_trial.hpp).

#include "runtime/worker_core_api_trial.hpp"

#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "config/experiment_config.hpp"
#include "gpu/system_sampler.hpp"
#include "messages/trial.pb.h"
#include "runtime/core_api_process.hpp"
#include "runtime/run_directory.hpp"
#include "runtime/worker_reporter.hpp"

namespace det::runtime {

void run_core_api_trial(worker_connection& link, const pb::TrialSpec& spec, const config::experiment_config& cfg,
                        const std::atomic<bool>& stop, pb::WorkerExit& exit) {
  run_directory dir(spec);
  const auto& workdir = dir.path();
  std::map<std::string, std::string> env{
      {"DET_TRIAL_ID", std::to_string(spec.trial_id())},
      {"DET_EXPERIMENT_ID", std::to_string(spec.experiment_id())},
      {"DET_ALLOCATION_ID", spec.allocation_id()},
      {"DET_ALLOCATION_TOKEN", spec.allocation_token()},
      {"DET_HPARAMS", spec.hparams()},
      {"DET_TRIAL_SEED", std::to_string(spec.seed())},
      {"DET_CHECKPOINT_DIR", spec.checkpoint_root()},
      {"DET_RECONNECT_WAIT", std::to_string(spec.reconnect_wait_s())},
  };
  if (!spec.resume_checkpoint_dir().empty()) {
    env["DET_LATEST_CHECKPOINT"] = spec.resume_checkpoint_dir();
  } else if (!spec.warm_start_checkpoint_dir().empty()) {
    env["DET_LATEST_CHECKPOINT"] = spec.warm_start_checkpoint_dir();
    env["DET_WARM_START"] = "1";  // its weights only: training counts from 0
  }
  std::string command;
  for (const auto& part : cfg.entrypoint) command += (command.empty() ? "" : " ") + part;
  std::cout << "trial " << spec.trial_id() << ": running `" << command << "` in " << workdir.string() << std::endl;
  // Profiling: the process reports its own metrics; the worker samples the machine meanwhile.
  std::optional<harness::system_sampler> sampler;
  if (cfg.profiling_enabled) sampler.emplace();
  worker_reporter reporter{link, spec.trial_id(), spec.allocation_id(), stop};
  auto report_samples = [&] {
    if (sampler)
      for (auto& sample : sampler->take()) reporter.profile_metrics("system", harness::progress{}, sample);
  };
  auto result = run_command(cfg.entrypoint, env, workdir.string(), stop, report_samples);
  reporter.drain();
  exit.set_outcome(!result.success ? pb::WORKER_OUTCOME_ERRORED
                   : result.stopped ? pb::WORKER_OUTCOME_STOPPED
                                    : pb::WORKER_OUTCOME_COMPLETED);
  exit.set_message(result.message);
  std::cout << "trial " << spec.trial_id() << ": " << (result.success ? "the entrypoint finished" : result.message)
            << std::endl;
}

} // namespace det::runtime
