// A Core API trial run by the worker (worker_core_api_trial.hpp).

#include "worker/worker_core_api_trial.hpp"

#include <functional>
#include <memory>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "node/run_environment.hpp"
#include "config/config_json.hpp"
#include "config/experiment_config.hpp"
#include "gpu/system_sampler.hpp"
#include "messages/trial.pb.h"
#include "node/cgroup_limits.hpp"
#include "worker/core_api_process.hpp"
#include "node/podman.hpp"
#include "node/directory_owner.hpp"
#include "worker/run_directory.hpp"
#include "worker/worker_reporter.hpp"
#include "worker/worker_rendezvous.hpp"

extern char** environ;

namespace det::runtime {

namespace {


std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : ",") + part;
  return out;
}


// The variables a process in an image gets: the run's own, the DET_ ones the agent gave this
// worker (the master's address, TLS files), and the config's for its slots' type.
std::map<std::string, std::string> container_env(const std::map<std::string, std::string>& run_env,
                                                 const config::environment_config& environment, bool cuda) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (entry.rfind("DET_", 0) == 0 && eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : environment.variables(cuda)) env[name] = value;
  for (const auto& [name, value] : run_env) env[name] = value;
  env["PYTHONPATH"] = python_client_mount;
  return env;
}

pb::BindMount mount_of(const std::string& host, const std::string& inside, bool read_only) {
  pb::BindMount m;
  m.set_host_path(host);
  m.set_container_path(inside);
  m.set_read_only(read_only);
  return m;
}

// The host paths a trial in an image needs at the same paths: its checkpoints (and those it
// starts from), the TLS files, and det's Python client.
std::vector<pb::BindMount> trial_mounts(const pb::TrialSpec& spec, const std::map<std::string, std::string>& env) {
  std::vector<pb::BindMount> mounts;
  std::filesystem::create_directories(spec.checkpoint_root());
  mounts.push_back(mount_of(spec.checkpoint_root(), spec.checkpoint_root(), false));
  for (const auto* dir : {&spec.resume_checkpoint_dir(), &spec.warm_start_checkpoint_dir()})
    if (!dir->empty() && dir->rfind(spec.checkpoint_root() + "/", 0) != 0) mounts.push_back(mount_of(*dir, *dir, true));
  for (const char* variable : {"DET_MASTER_CERT_FILE", "DET_TLS_CERT_FILE", "DET_TLS_KEY_FILE"})
    if (auto it = env.find(variable); it != env.end() && !it->second.empty())
      mounts.push_back(mount_of(it->second, it->second, true));
  mounts.push_back(mount_of(python_client_directory(), python_client_mount, true));
  return mounts;
}

// Who the process in the image runs as: DET_CONTAINER_USER ("UID:GID"), which an agent that
// switches users sets for a worker it leaves as root so that it can run podman; nullopt: the
// image's own user (an agent that runs every det user's work as itself).
std::optional<process::unix_identity> container_user() {
  const char* text = std::getenv("DET_CONTAINER_USER");
  if (!text || !*text) return std::nullopt;
  unsigned long uid = 0, gid = 0;
  char colon = 0;
  std::istringstream in{text};
  if (!(in >> uid >> colon >> gid) || colon != ':' || uid == 0 || gid == 0)
    throw std::runtime_error(std::string("DET_CONTAINER_USER must be UID:GID of a user other than root, not \"") + text + "\"");
  return process::unix_identity{static_cast<uid_t>(uid), static_cast<gid_t>(gid)};
}

// The visible GPUs of this run (the agent's CUDA_VISIBLE_DEVICES), for the container's devices.
std::vector<std::string> visible_gpus() {
  std::vector<std::string> gpus;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string list = visible ? visible : "";
  size_t at = 0;
  while (at < list.size()) {
    auto end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    if (end > at) gpus.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  return gpus;
}

// The entrypoint as a child of this worker, with det_core importable without a copy in the model
// directory (which wins when it has one).
command_result run_on_host(const config::experiment_config& cfg, std::map<std::string, std::string> env,
                           const std::string& workdir, const std::atomic<bool>& stop,
                           const std::function<void()>& on_poll) {
  const char* path = std::getenv("PYTHONPATH");
  env["PYTHONPATH"] = python_client_directory() + (path && *path ? ":" + std::string(path) : "");
  return run_command(cfg.process_command(), env, workdir, stop, on_poll);
}

// The entrypoint in `image`, held to the config's limits by a cgroup of det's when it can make
// one (then a run killed for memory says so). Throws image_unavailable when the image cannot be had.
command_result run_in_image(const std::string& image, int rank, const pb::TrialSpec& spec, const config::experiment_config& cfg,
                            const std::map<std::string, std::string>& env, const std::string& workdir,
                            const std::vector<std::string>& gpus, const std::atomic<bool>& stop,
                            const std::function<void()>& on_poll) {
  const auto name = container_name(spec.allocation_id(), rank);
  const auto environment = run_environment_of(cfg.environment);
  std::unique_ptr<cgroup_limits> limits;
  if (environment.memory_limit_bytes() > 0 || environment.cpu_limit() > 0) {
    std::string why;
    limits = cgroup_limits::create(name, environment.memory_limit_bytes(), environment.cpu_limit(), why);
    if (!limits)
      std::cout << "trial " << spec.trial_id() << ": podman enforces the limits (" << why
                << "), and cannot say whether the memory limit ended it" << std::endl;
  }
  ensure_image(image, environment);
  remove_container(name);  // left by a run of this allocation whose worker did not see it end
  command_result result;
  try {
    container_request request{name, image, entrypoint_argv(cfg.process_command()),
                              container_env(env, cfg.environment, !gpus.empty()), workdir,
                              trial_mounts(spec, env), gpus, &environment, limits ? limits->parent_path() : "",
                              container_user()};
    // The process in the image is its owner's user, as a worker on the host would be.
    if (request.user) give_directory_to(workdir, *request.user);
    result = run_argv(podman_run_argv(request), podman_run_environment(request), workdir, stop, on_poll);
    if (!result.success && ran_out_of_memory(limits.get(), result.end.exit_code, result.end.signal))
      result.message = memory_limit_sentence("trial", environment.memory_limit_bytes());
  } catch (const std::exception& e) {
    result = {false, false, e.what(), {}};
  }
  remove_container(name);  // before its cgroup goes
  return result;
}

// Linux holds one environment string to 128 KiB (MAX_ARG_STRLEN); half of that leaves room.
constexpr std::size_t max_config_json_bytes = std::size_t{64} << 10;

// DET_EXPERIMENT_CONFIG: the experiment config as JSON, which Determined's training code reads as
// ClusterInfo.trial._config. A config too large for the environment is left out, and said so.
void add_experiment_config(const pb::TrialSpec& spec, std::map<std::string, std::string>& env) {
  std::string json;
  try {
    json = config::experiment_config_json(spec.config());
  } catch (const std::exception& e) {
    std::cout << "trial " << spec.trial_id() << ": DET_EXPERIMENT_CONFIG is not set: " << e.what() << std::endl;
    return;
  }
  if (json.size() > max_config_json_bytes) {
    std::cout << "trial " << spec.trial_id() << ": the experiment config is " << (json.size() >> 10)
              << " KiB as JSON, more than the " << (max_config_json_bytes >> 10)
              << " KiB det passes in DET_EXPERIMENT_CONFIG; it is not set, and "
                 "det.get_cluster_info().trial._config is {}" << std::endl;
    return;
  }
  env["DET_EXPERIMENT_CONFIG"] = std::move(json);
}

}  // namespace

std::vector<std::string> container_addresses(worker_connection& link, const std::string& allocation_id, int rank,
                                             int size, const std::string& own_address,
                                             std::chrono::milliseconds timeout) {
  worker_rendezvous rendezvous{link, allocation_id};
  rendezvous.set("container/" + std::to_string(rank), own_address);
  std::vector<std::string> addresses;
  for (int r = 0; r < size; ++r) addresses.push_back(rendezvous.await("container/" + std::to_string(r), timeout));
  return addresses;
}

void run_core_api_trial(worker_connection& link, const pb::TrialSpec& spec, const config::experiment_config& cfg,
                        const container_place& place, const std::atomic<bool>& stop, pb::WorkerExit& exit) {
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
      {"DET_CONTAINER_RANK", std::to_string(place.rank)},
      {"DET_CONTAINER_ADDRS", joined(place.addresses)},
      {"DET_CHIEF_IP", place.addresses.empty() ? "" : place.addresses.front()},
  };
  add_experiment_config(spec, env);
  if (!spec.resume_checkpoint_dir().empty()) {
    env["DET_LATEST_CHECKPOINT"] = spec.resume_checkpoint_dir();
    if (spec.steps_completed() > 0) env["DET_STEPS_COMPLETED"] = std::to_string(spec.steps_completed());
  } else if (!spec.warm_start_checkpoint_dir().empty()) {
    env["DET_LATEST_CHECKPOINT"] = spec.warm_start_checkpoint_dir();
    env["DET_WARM_START"] = "1";  // its weights only: training counts from 0
  }
  const auto gpus = visible_gpus();
  const auto& image = cfg.environment.image(!gpus.empty());
  std::string command;
  for (const auto& part : cfg.process_command()) command += (command.empty() ? "" : " ") + part;
  std::cout << "trial " << spec.trial_id() << ": running `" << command << "` in " << workdir.string()
            << (image.empty() ? "" : " in the image " + image) << std::endl;
  // Profiling: the process reports its own metrics; the chief's worker samples its machine meanwhile.
  std::optional<harness::system_sampler> sampler;
  if (cfg.profiling_enabled && place.rank == 0) sampler.emplace();
  worker_reporter reporter{link, spec.trial_id(), spec.allocation_id(), stop};
  auto report_samples = [&] {
    if (sampler)
      for (auto& sample : sampler->take()) reporter.profile_metrics("system", harness::progress{}, sample);
  };
  command_result result;
  try {
    result = image.empty() ? run_on_host(cfg, env, workdir.string(), stop, report_samples)
                           : run_in_image(image, place.rank, spec, cfg, env, workdir.string(), gpus, stop, report_samples);
  } catch (const image_unavailable& e) {
    reporter.drain();
    exit.set_outcome(pb::WORKER_OUTCOME_INVALID_ENVIRONMENT);
    exit.set_message(e.what());
    std::cout << "trial " << spec.trial_id() << ": " << e.what() << std::endl;
    return;
  }
  reporter.drain();
  exit.set_outcome(!result.success ? pb::WORKER_OUTCOME_ERRORED
                   : result.stopped ? pb::WORKER_OUTCOME_STOPPED
                                    : pb::WORKER_OUTCOME_COMPLETED);
  exit.set_message(result.message);
  std::cout << "trial " << spec.trial_id() << ": " << (result.success ? "the entrypoint finished" : result.message)
            << std::endl;
}

}  // namespace det::runtime
