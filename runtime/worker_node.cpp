// det-worker: one trial's training process, started by an agent.
// It joins the master's actor system, asks its trial for the spec, trains
// with the LibTorch harness and reports metrics to the trial actor. SIGTERM
// asks it to stop gracefully (the searcher or the user stopped the trial).

#include <atomic>
#include <chrono>
#include <csignal>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <unistd.h>

#include "messages/timestamp.hpp"

#include "caf/all.hpp"
#include "caf/io/all.hpp"
#include "config/experiment_config.hpp"
#include "gpu/harness.hpp"
#include "gpu/system_sampler.hpp"
#include "messages/caf_types.hpp"
#include "messages/interfaces.hpp"
#include "runtime/core_api_process.hpp"
#include "runtime/node.hpp"
#include "runtime/tar_archive.hpp"

namespace det::runtime {
namespace {

constexpr auto hello_timeout = std::chrono::seconds(30);
constexpr auto report_timeout = std::chrono::seconds(30);
constexpr int connect_attempts = 20;

std::atomic<bool> stop_requested{false};

extern "C" void on_stop_signal(int) {
  stop_requested = true;
}

/// Sends each report to the trial actor without stopping training: at most
/// one report is in flight, and its acknowledgement is collected before the
/// next one goes out, so a worker never runs more than one report ahead of
/// what the master has taken in.
class actor_reporter final : public harness::reporter {
public:
  actor_reporter(caf::scoped_actor& self, trial_endpoint trial, int64_t trial_id, std::string allocation_id)
      : self_(self), trial_(std::move(trial)), trial_id_(trial_id), allocation_id_(std::move(allocation_id)) {}

  void training_metrics(const harness::progress& p, const std::map<std::string, double>& m) override {
    send("training", p, m);
  }
  void validation_metrics(const harness::progress& p,
                          const std::map<std::string, double>& m) override {
    send("validation", p, m);
  }
  void profile_metrics(const std::string& group, const harness::progress& p,
                       const std::map<std::string, double>& m) override {
    send(group.c_str(), p, m);
  }
  void log(const std::string& line) override { std::cout << line << std::endl; }

  /// Waits until the master has recorded the checkpoint: a trial that stops right after must not
  /// be restarted without it.
  void checkpoint_saved(const harness::saved_checkpoint& saved) override {
    drain();
    pb::Checkpoint c;
    c.set_uuid(saved.uuid);
    c.set_trial_id(trial_id_);
    c.set_allocation_id(allocation_id_);
    c.set_steps_completed(saved.at.batches);
    c.set_total_records(saved.at.records);
    c.set_total_epochs(saved.at.epochs);
    for (const auto& [name, size] : saved.resources)
      (*c.mutable_resources())[name] = size;
    std::string failure;
    self_->request(trial_, report_timeout, std::move(c))
        .receive([&](bool recorded) { failure = recorded ? "" : "its database refused it"; },
                 [&](caf::error& e) { failure = error_sentence(self_->system(), e); });
    if (!failure.empty())
      throw std::runtime_error("the master did not record checkpoint " + saved.uuid + ": " + failure);
    std::cout << "saved checkpoint " << saved.uuid << " at batch " << saved.at.batches << std::endl;
  }
  bool should_stop() override {
    if (!stop_requested.load(std::memory_order_relaxed))
      return false;
    stopped_early_ = true;  // the harness ends its loop the first time it sees this
    return true;
  }

  /// Whether training ended because a stop was requested (not merely asked for afterwards).
  bool stopped_early() const { return stopped_early_; }

  /// Waits for the report still in flight, if any; throws if the master refused it.
  void drain() {
    if (!pending_)
      return;
    std::string failure;
    pending_->receive([](int64_t) {},
                      [&](caf::error& e) { failure = error_sentence(self_->system(), e); });
    pending_.reset();
    if (!failure.empty())
      throw std::runtime_error("the master did not take the " + pending_group_ +
                               " metrics: " + failure);
  }

private:
  using pending_request = decltype(std::declval<caf::scoped_actor&>()->request(
      std::declval<const trial_endpoint&>(), report_timeout, std::declval<pb::MetricBatch>()));

  void send(const char* group, const harness::progress& p, const std::map<std::string, double>& m) {
    drain();
    pb::MetricBatch batch;
    batch.set_allocation_id(allocation_id_);
    auto* r = batch.add_reports();
    r->set_trial_id(trial_id_);
    r->set_group(group);
    r->set_total_batches(p.batches);
    r->set_total_records(p.records);
    r->set_total_epochs(p.epochs);
    for (auto& [k, v] : m)
      (*r->mutable_metrics())[k] = v;
    (*r->mutable_metrics())["batches"] = static_cast<double>(p.batches);
    (*r->mutable_metrics())["epochs"] = p.epochs;
    *r->mutable_time() = det::now();
    pending_group_ = group;
    pending_.emplace(self_->request(trial_, report_timeout, std::move(batch)));
  }

  caf::scoped_actor& self_;
  trial_endpoint trial_;
  int64_t trial_id_;
  std::string allocation_id_;
  std::optional<pending_request> pending_;
  std::string pending_group_;
  bool stopped_early_ = false;
};

harness::unit to_harness(config::length_unit u) {
  switch (u) {
    case config::length_unit::records:
      return harness::unit::records;
    case config::length_unit::epochs:
      return harness::unit::epochs;
    default:
      return harness::unit::batches;
  }
}

const std::string builtin_prefix = "builtin:";
const std::string plugin_prefix = "plugin:";

/// builtin:NAME or plugin:LIBRARY:CLASS: the harness trains it in this process.
bool is_harness_trial(const config::experiment_config& cfg) {
  if (cfg.entrypoint.size() != 1) return false;
  const auto& entry = cfg.entrypoint.front();
  return entry.rfind(builtin_prefix, 0) == 0 || entry.rfind(plugin_prefix, 0) == 0;
}

/// The trial's working directory, holding the experiment's model definition; removed when the
/// worker is done with it.
class working_directory {
 public:
  // mkdtemp: a fresh directory only this user can enter, whatever else is in /tmp.
  explicit working_directory(const pb::TrialSpec& spec) {
    auto pattern = (std::filesystem::temp_directory_path() / ("det-trial-" + spec.allocation_id() + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create the trial's working directory " + pattern + ": " + std::strerror(errno));
    path_ = pattern;
    if (!spec.model_definition().empty())
      unpack_archive(spec.model_definition(), path_.string());
  }
  ~working_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

harness::training_plan make_plan(const pb::TrialSpec& spec, const config::experiment_config& cfg,
                                 const std::filesystem::path& workdir) {
  auto entry = cfg.entrypoint.front();
  harness::training_plan plan;
  if (entry.rfind(plugin_prefix, 0) == 0) {
    auto rest = entry.substr(plugin_prefix.size());
    auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
      throw std::runtime_error("entrypoint \"" + entry + "\" must read plugin:LIBRARY:CLASS, e.g. "
                               "plugin:build/libmytrial.so:MyTrial");
    plan.trial_name = "plugin";
    plan.plugin_library = (workdir / rest.substr(0, colon)).string();
    plan.plugin_class = rest.substr(colon + 1);
  } else {
    plan.trial_name = entry.substr(builtin_prefix.size());
  }
  plan.hparams_json = spec.hparams();
  plan.data_json = cfg.data_json;
  plan.seed = static_cast<uint64_t>(spec.seed());
  auto unit = config::length_unit_from_string(spec.validate_after_unit());
  plan.length_unit = to_harness(unit.value_or(config::length_unit::batches));
  plan.length = spec.validate_after_length();
  if (cfg.min_validation_period)
    plan.min_validation_period_batches = cfg.batches_in(*cfg.min_validation_period);
  plan.report_every_batches = cfg.scheduling_unit;
  plan.records_per_epoch = cfg.records_per_epoch;
  if (cfg.min_checkpoint_period)
    plan.min_checkpoint_period_batches = cfg.batches_in(*cfg.min_checkpoint_period);
  plan.checkpoint_dir = spec.checkpoint_root();
  plan.profiling = cfg.profiling_enabled;
  plan.mixed_precision = cfg.mixed_precision;
  plan.gradient_clip_norm = cfg.gradient_clip_norm;
  plan.resume_from = spec.resume_checkpoint_dir();
  plan.warm_start_from = spec.warm_start_checkpoint_dir();
  return plan;
}

/// Reports how the run ended and leaves at once.
[[noreturn]] int finish(caf::scoped_actor& self, const trial_endpoint& trial, const pb::WorkerExit& exit) {
  self->request(trial, report_timeout, exit)
      .receive([](bool) {},
               [&](caf::error& e) {
                 std::cerr << "worker: the exit report did not reach the master: " << self->system().render(e)
                           << std::endl;
               });
  // Nothing is left to do: skip the actor system's orderly shutdown (joining
  // its threads, closing the connection politely), which the agent would wait
  // for before it could report the container's exit.
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(exit.success() ? 0 : 1);
}

/// A Core API trial: the entrypoint runs as a child process in a working directory holding the
/// experiment's model definition; it talks to the master's REST API itself.
void run_core_api_trial(caf::scoped_actor& self, const trial_endpoint& trial, const pb::TrialSpec& spec,
                        const config::experiment_config& cfg, pb::WorkerExit& exit) {
  working_directory dir(spec);
  const auto& workdir = dir.path();
  std::map<std::string, std::string> env{
      {"DET_TRIAL_ID", std::to_string(spec.trial_id())},
      {"DET_EXPERIMENT_ID", std::to_string(spec.experiment_id())},
      {"DET_ALLOCATION_ID", spec.allocation_id()},
      {"DET_ALLOCATION_TOKEN", spec.allocation_token()},
      {"DET_HPARAMS", spec.hparams()},
      {"DET_TRIAL_SEED", std::to_string(spec.seed())},
      {"DET_CHECKPOINT_DIR", spec.checkpoint_root()},
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
  actor_reporter reporter{self, trial, spec.trial_id(), spec.allocation_id()};
  auto report_samples = [&] {
    if (sampler)
      for (auto& sample : sampler->take()) reporter.profile_metrics("system", harness::progress{}, sample);
  };
  auto result = run_command(cfg.entrypoint, env, workdir.string(), stop_requested, report_samples);
  reporter.drain();
  exit.set_success(result.success);
  exit.set_message(result.message);
  exit.set_stopped(result.stopped);
  std::cout << "trial " << spec.trial_id() << ": " << (result.success ? "the entrypoint finished" : result.message)
            << std::endl;
}

} // namespace

int run_worker(const worker_options& opts) {
  std::signal(SIGTERM, on_stop_signal);
  auto [host, port] = split_host_port(opts.master, "--master");
  caf::actor_system_config cfg;
  configure_node(cfg);
  // Training runs on this thread; the actors here only carry messages.
  cfg.set("scheduler.max-threads", size_t{1});
  caf::actor_system sys{cfg};
  caf::expected<master_actor> master{caf::sec::invalid_argument};
  for (int i = 0; i < connect_attempts; ++i) {
    master = sys.middleman().remote_actor<master_actor>(host, port);
    if (master)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  if (!master) {
    std::cerr << "worker: cannot reach the master at " << opts.master << ": "
              << sys.render(master.error()) << std::endl;
    return 3;
  }
  caf::scoped_actor self{sys};
  pb::WorkerHello hello;
  hello.set_allocation_id(opts.allocation_id);
  hello.set_trial_id(opts.trial_id);
  hello.set_pid(::getpid());
  pb::TrialSpec spec;
  trial_endpoint trial;
  std::string failure;
  self->request(*master, hello_timeout, hello)
      .receive(
          [&](pb::TrialSpec& s, trial_endpoint t) {
            spec = std::move(s);
            trial = std::move(t);
          },
          [&](caf::error& e) { failure = error_sentence(sys, e); });
  if (!failure.empty()) {
    std::cerr << "worker: the master did not hand out trial " << opts.trial_id << ": " << failure
              << std::endl;
    return 3;
  }
  pb::WorkerExit exit;
  exit.set_trial_id(opts.trial_id);
  exit.set_allocation_id(opts.allocation_id);
  try {
    auto cfg = config::parse_experiment_config(spec.config(), "experiment " + std::to_string(spec.experiment_id()));
    if (!is_harness_trial(cfg)) {
      run_core_api_trial(self, trial, spec, cfg, exit);
      return finish(self, trial, exit);
    }
    working_directory workdir(spec);
    auto plan = make_plan(spec, cfg, workdir.path());
    std::cout << "trial " << spec.trial_id() << ": training " << cfg.entrypoint.front() << " to "
              << plan.length << " " << spec.validate_after_unit() << " with hyperparameters "
              << spec.hparams() << std::endl;
    actor_reporter reporter{self, trial, spec.trial_id(), spec.allocation_id()};
    harness::run_trial(plan, reporter);
    reporter.drain();
    exit.set_success(true);
    exit.set_stopped(reporter.stopped_early());
    std::cout << "trial " << spec.trial_id()
              << (reporter.stopped_early() ? ": stopped on request" : ": finished training")
              << std::endl;
  } catch (const harness::invalid_hyperparameters& e) {
    std::cerr << "error: invalid hyperparameters: " << e.what() << std::endl;
    exit.set_success(false);
    exit.set_invalid_hyperparameters(true);
    exit.set_message(std::string("invalid hyperparameters: ") + e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    exit.set_success(false);
    exit.set_message(e.what());
  } catch (...) {  // a trial library may throw anything
    std::cerr << "error: the trial threw something that is not a std::exception" << std::endl;
    exit.set_success(false);
    exit.set_message("the trial threw something that is not a std::exception");
  }
  return finish(self, trial, exit);
}

} // namespace det::runtime
