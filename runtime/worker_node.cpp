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
#include <memory>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
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
// A metric report is acknowledged within milliseconds (one group commit). CAF 0.17 does not fail a
// request whose remote receiver vanished with its node, so a lost master shows as this timeout;
// the report is then sent again after reconnecting (a stored step is not stored twice).
constexpr auto metrics_ack_timeout = std::chrono::seconds(5);
constexpr int connect_attempts = 20;

std::atomic<bool> stop_requested{false};

extern "C" void on_stop_signal(int) {
  stop_requested = true;
}

/// The worker's line to its trial on the master. If the master goes away (a restart), calls
/// wait while it reconnects and says hello again, for up to the trial's reconnect_wait_s: a
/// restarted master takes the run back and the report that failed is sent again. An explicit
/// refusal (a run that is over, metrics the master could not store) is not retried.
class master_link {
 public:
  master_link(caf::scoped_actor& self, std::string host, uint16_t port, pb::WorkerHello hello)
      : self_(self), host_(std::move(host)), port_(port), hello_(std::move(hello)) {}

  /// Connects and says hello; false (with `failure` set, and `refused` if the master answered
  /// no) if that does not work.
  bool connect(pb::TrialSpec& spec, std::string& failure, bool& refused) {
    refused = false;
    auto master = self_->system().middleman().remote_actor<master_actor>(host_, port_);
    if (!master) {
      failure = self_->system().render(master.error());
      return false;
    }
    bool ok = false;
    self_->request(*master, hello_timeout, hello_)
        .receive(
            [&](pb::TrialSpec& s, trial_endpoint t) {
              spec = std::move(s);
              trial_ = std::move(t);
              self_->monitor(trial_);  // a lost connection shows as its down message
              ok = true;
            },
            [&](caf::error& e) {
              failure = error_sentence(self_->system(), e);
              refused = !lost_master(e);
            });
    return ok;
  }

  void set_reconnect_wait(int64_t seconds) { reconnect_wait_s_ = seconds; }
  const trial_endpoint& trial() const { return trial_; }

  /// Whether `e` means the master (or the way to it) is gone, rather than that it said no.
  static bool lost_master(const caf::error& e) {
    return e == caf::sec::request_receiver_down || e == caf::sec::request_timeout ||
           e == caf::sec::no_route_to_receiving_node || e == caf::sec::remote_linking_failed ||
           e == caf::sec::cannot_connect_to_node;
  }

  /// After a lost master: reconnects within the wait, or throws.
  void reconnect(const std::string& while_doing) {
    std::cerr << "worker: lost the master while " << while_doing << "; reconnecting for up to " << reconnect_wait_s_
              << " s" << std::endl;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(reconnect_wait_s_);
    std::string failure;
    pb::TrialSpec ignored;
    bool refused = false;
    while (std::chrono::steady_clock::now() < deadline) {
      // A restarted master may not have restored the trial yet: a refusal is worth a retry too.
      if (connect(ignored, failure, refused)) {
        std::cerr << "worker: reconnected to the master" << std::endl;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    throw std::runtime_error("the master did not come back within " + std::to_string(reconnect_wait_s_) +
                             " s (" + failure + ")");
  }

  /// Whether the connection to the master is known to be gone (its heartbeats stopped or it
  /// closed): checked before a call, since a request into a dead connection only times out.
  bool connection_lost() {
    bool lost = false;
    self_->receive([&](caf::down_msg& dm) { lost = lost || dm.source == trial_.address(); },
                   caf::after(std::chrono::seconds(0)) >> [] {});
    return lost;
  }

  /// Asks the trial `msg` and hands the reply to `on_reply`, across reconnections.
  template <class Msg, class OnReply>
  void call(const Msg& msg, const std::string& what, OnReply on_reply) {
    if (connection_lost())
      reconnect(what);
    for (;;) {
      std::optional<caf::error> error;
      self_->request(trial_, report_timeout, msg).receive(on_reply, [&](caf::error& e) { error = std::move(e); });
      if (!error) return;
      if (!lost_master(*error))
        throw std::runtime_error("the master refused " + what + ": " + error_sentence(self_->system(), *error));
      reconnect(what);
    }
  }

 private:
  caf::scoped_actor& self_;
  std::string host_;
  uint16_t port_;
  pb::WorkerHello hello_;
  trial_endpoint trial_;
  int64_t reconnect_wait_s_ = 25;
};

/// Sends each report to the trial actor without stopping training: at most
/// one report is in flight, and its acknowledgement is collected before the
/// next one goes out, so a worker never runs more than one report ahead of
/// what the master has taken in.
class actor_reporter final : public harness::reporter {
public:
  actor_reporter(caf::scoped_actor& self, master_link& link, int64_t trial_id, std::string allocation_id)
      : self_(self), link_(link), trial_id_(trial_id), allocation_id_(std::move(allocation_id)) {}

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
    bool recorded = false;
    link_.call(c, "checkpoint " + saved.uuid, [&](bool r) { recorded = r; });
    if (!recorded)
      throw std::runtime_error("the master did not record checkpoint " + saved.uuid +
                               ": its database refused it, or the run is over");
    std::cout << "saved checkpoint " << saved.uuid << " at batch " << saved.at.batches << std::endl;
  }
  bool should_stop() override { return stop_requested.load(std::memory_order_relaxed); }

  /// Waits for the report still in flight, if any (sending it again after a reconnection);
  /// throws if the master refused it.
  void drain() {
    if (!pending_)
      return;
    std::optional<caf::error> error;
    pending_->receive([](int64_t) {}, [&](caf::error& e) { error = std::move(e); });
    pending_.reset();
    if (!error)
      return;
    if (!master_link::lost_master(*error))
      throw std::runtime_error("the master did not take the " + pending_group_ +
                               " metrics: " + error_sentence(self_->system(), *error));
    link_.reconnect("reporting " + pending_group_ + " metrics");
    link_.call(pending_batch_, "the " + pending_group_ + " metrics", [](int64_t) {});
  }

private:
  using pending_request = decltype(std::declval<caf::scoped_actor&>()->request(
      std::declval<const trial_endpoint&>(), metrics_ack_timeout, std::declval<pb::MetricBatch>()));

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
    pending_batch_ = batch;  // kept until acknowledged, to send again after a reconnection
    pending_.emplace(self_->request(link_.trial(), metrics_ack_timeout, std::move(batch)));
  }

  caf::scoped_actor& self_;
  master_link& link_;
  int64_t trial_id_;
  std::string allocation_id_;
  std::optional<pending_request> pending_;
  pb::MetricBatch pending_batch_;
  std::string pending_group_;
};

/// A distributed run's rendezvous through its trial on the master.
class master_rendezvous final : public harness::rendezvous_store {
 public:
  master_rendezvous(master_link& link, std::string allocation_id)
      : link_(link), allocation_id_(std::move(allocation_id)) {}

  void set(const std::string& key, const std::string& value) override {
    pb::Rendezvous r;
    r.set_allocation_id(allocation_id_);
    r.set_key(key);
    r.set_value(value);
    r.set_set(true);
    link_.call(r, "the rendezvous", [](const pb::Rendezvous&) {});
  }
  std::optional<std::string> get(const std::string& key) override {
    pb::Rendezvous r;
    r.set_allocation_id(allocation_id_);
    r.set_key(key);
    std::optional<std::string> value;
    link_.call(r, "the rendezvous", [&](pb::Rendezvous& answer) {
      if (answer.found()) value = std::move(*answer.mutable_value());
    });
    return value;
  }

 private:
  master_link& link_;
  std::string allocation_id_;
};

// The workers of a run start within seconds of each other; a peer that cannot be reached (a
// wrong address) fails the run after this rather than holding its slots.
constexpr auto peer_connect_timeout = std::chrono::minutes(2);
// An exchange also waits out the others' validations and the chief's checkpoints, so it is
// patient (PyTorch's default); a peer that dies is killed with its run by the master.
constexpr auto peer_exchange_timeout = std::chrono::minutes(30);

/// Where the other workers of a run reach this one: DET_PEER_ADDRESS if the agent's environment
/// sets it, else the address of the interface this machine reaches the master through (the
/// loopback when the master is on it). Not the hostname, which Debian maps to 127.0.1.1. A UDP
/// socket's connect sends nothing; it only picks the route.
std::string peer_address(const std::string& master_host, uint16_t master_port) {
  if (const char* chosen = std::getenv("DET_PEER_ADDRESS"); chosen && *chosen) return chosen;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(master_host.c_str(), std::to_string(master_port).c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("cannot resolve the master's host " + master_host + ": " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in local{};
  socklen_t length = sizeof local;
  bool ok = ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  int error = errno;
  ::close(fd);
  if (!ok)
    throw std::runtime_error("cannot find this machine's address towards the master at " + master_host + ": " +
                             std::strerror(error));
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  return text;
}

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

/// Reports how the run ended (the chief always, other workers of a distributed run their
/// failures) and leaves at once.
[[noreturn]] int finish(master_link& link, const pb::WorkerExit& exit) {
  try {
    if (exit.rank() == 0 || !exit.success())
      link.call(exit, "the exit report", [](bool) {});
  } catch (const std::exception& e) {
    std::cerr << "worker: the exit report did not reach the master: " << e.what() << std::endl;
  }
  // Nothing is left to do: skip the actor system's orderly shutdown (joining
  // its threads, closing the connection politely), which the agent would wait
  // for before it could report the container's exit.
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(exit.success() ? 0 : 1);
}

/// A Core API trial: the entrypoint runs as a child process in a working directory holding the
/// experiment's model definition; it talks to the master's REST API itself.
void run_core_api_trial(caf::scoped_actor& self, master_link& link, const pb::TrialSpec& spec,
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
  actor_reporter reporter{self, link, spec.trial_id(), spec.allocation_id()};
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
  caf::scoped_actor self{sys};
  pb::WorkerHello hello;
  hello.set_allocation_id(opts.allocation_id);
  hello.set_trial_id(opts.trial_id);
  hello.set_pid(::getpid());
  hello.set_rank(opts.rank);
  master_link link{self, host, port, hello};
  pb::TrialSpec spec;
  std::string failure;
  bool connected = false, refused = false;
  for (int i = 0; i < connect_attempts && !connected && !refused; ++i) {
    connected = link.connect(spec, failure, refused);
    if (!connected && !refused)
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  if (!connected) {
    std::cerr << "worker: the master at " << opts.master << " did not hand out trial " << opts.trial_id << ": "
              << failure << std::endl;
    return 3;
  }
  if (spec.reconnect_wait_s() > 0)
    link.set_reconnect_wait(spec.reconnect_wait_s());
  pb::WorkerExit exit;
  exit.set_trial_id(opts.trial_id);
  exit.set_allocation_id(opts.allocation_id);
  exit.set_rank(opts.rank);
  try {
    auto cfg = config::parse_experiment_config(spec.config(), "experiment " + std::to_string(spec.experiment_id()));
    if (!cfg.harness_entrypoint()) {  // the pool places it on one agent
      run_core_api_trial(self, link, spec, cfg, exit);
      return finish(link, exit);
    }
    working_directory workdir(spec);
    auto plan = make_plan(spec, cfg, workdir.path());
    std::cout << "trial " << spec.trial_id() << ": training " << cfg.entrypoint.front() << " to "
              << plan.length << " " << spec.validate_after_unit() << " with hyperparameters "
              << spec.hparams() << std::endl;
    actor_reporter reporter{self, link, spec.trial_id(), spec.allocation_id()};
    std::unique_ptr<harness::collective> peers;
    if (opts.world_size > 1) {
      master_rendezvous rendezvous{link, spec.allocation_id()};
      peers = harness::connect_gloo(opts.rank, opts.world_size, rendezvous, peer_address(host, port),
                                    std::chrono::duration_cast<std::chrono::milliseconds>(peer_connect_timeout),
                                    std::chrono::duration_cast<std::chrono::milliseconds>(peer_exchange_timeout));
      std::cout << "trial " << spec.trial_id() << ": worker " << opts.rank << " of " << opts.world_size
                << " connected to the others" << std::endl;
      plan.peers = peers.get();
    }
    bool stopped = harness::run_trial(plan, reporter);
    reporter.drain();
    exit.set_success(true);
    exit.set_stopped(stopped);
    std::cout << "trial " << spec.trial_id() << (stopped ? ": stopped on request" : ": finished training")
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
  return finish(link, exit);
}

} // namespace det::runtime
