// The Slurm provider: each instance is a batch job, named after it, that runs the agent start-up
// script, so det schedules onto an existing HPC cluster's nodes. sbatch, squeue and scancel run
// with the master's environment (SLURM_CONF and the like).

#include <sstream>
#include <stdexcept>

#include "process/captured_run.hpp"
#include "provisioner/providers.hpp"

namespace det::provisioner {

namespace {

class slurm_provider final : public instance_provider {
 public:
  slurm_provider(config::provider_config config, provider_context context)
      : config_(std::move(config)), context_(std::move(context)) {}

  std::vector<listed_instance> list(const std::vector<std::string>& known) override {
    if (known.empty()) return {};
    std::string names;
    for (const auto& id : known) names += (names.empty() ? "" : ",") + id;
    auto out = run({"squeue", "--noheader", "--format=%j %T", "--name=" + names}, "squeue");
    std::vector<listed_instance> listed;
    std::istringstream lines(out);
    std::string id, state;
    while (lines >> id >> state) listed.push_back({id, instance_state_from(state)});
    return listed;
  }

  void launch(const std::string& id) override {
    const auto script = write_agent_startup_script(config_, context_, id);
    std::vector<std::string> argv{"sbatch", "--parsable", "--job-name=" + id,
                                  "--output=" + (context_.directory / (id + ".log")).string(), "--nodes=1",
                                  "--ntasks=1"};
    if (!config_.cuda_slots) argv.push_back("--cpus-per-task=" + std::to_string(config_.instance_slots));
    if (!config_.partition.empty()) argv.push_back("--partition=" + config_.partition);
    if (!config_.gres.empty()) argv.push_back("--gres=" + config_.gres);
    if (!config_.time_limit.empty()) argv.push_back("--time=" + config_.time_limit);
    argv.insert(argv.end(), config_.sbatch_args.begin(), config_.sbatch_args.end());
    argv.push_back(script.string());
    run(argv, "sbatch");
  }

  void terminate(const std::string& id) override { run({"scancel", "--name=" + id}, "scancel"); }

 private:
  static std::string run(const std::vector<std::string>& argv, const std::string& which) {
    return process::run_captured(argv, {}, std::chrono::minutes(1)).output_of(which);
  }

  config::provider_config config_;
  provider_context context_;
};

}  // namespace

std::unique_ptr<instance_provider> make_slurm_provider(const config::provider_config& config,
                                                       provider_context context) {
  return std::make_unique<slurm_provider>(config, std::move(context));
}

std::unique_ptr<instance_provider> make_provider(const config::provider_config& config, provider_context context) {
  switch (config.type) {
    case config::provider_type::process: return make_process_provider(config, std::move(context));
    case config::provider_type::command: return make_command_provider(config, std::move(context));
    case config::provider_type::slurm: return make_slurm_provider(config, std::move(context));
  }
  throw std::logic_error("unknown provider type");
}

}  // namespace det::provisioner
