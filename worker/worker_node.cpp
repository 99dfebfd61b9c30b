// det-worker: one trial's training process, started by an agent.
// It joins the master's actor system, asks its trial for the spec, trains
// with the LibTorch harness and reports metrics to the trial actor. SIGTERM
// asks it to stop gracefully (the searcher or the user stopped the trial).
// This file only orchestrates: the pieces are the worker_*, route_probe and run_directory files.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>

#include "config/experiment_config.hpp"
#include "gpu/collective.hpp"
#include "gpu/nccl_collective.hpp"
#include "gpu/shared_memory_collective.hpp"
#include "gpu/harness.hpp"
#include "messages/length_unit.hpp"
#include "messages/trial.pb.h"
#include "node/node.hpp"
#include "worker/route_probe.hpp"
#include "worker/run_directory.hpp"
#include "worker/worker_connection.hpp"
#include "worker/worker_core_api_trial.hpp"
#include "worker/worker_event_files.hpp"
#include "worker/worker_rendezvous.hpp"
#include "worker/worker_reporter.hpp"
#include "worker/worker_training_plan.hpp"

namespace det::runtime {
namespace {

constexpr int connect_attempts = 20;

// The workers of a run start within seconds of each other; a peer that cannot be reached (a
// wrong address) fails the run after this rather than holding its slots.
constexpr auto peer_connect_timeout = std::chrono::minutes(2);
// An exchange also waits out the others' validations and the chief's checkpoints, so it is
// patient (PyTorch's default); a peer that dies is killed with its run by the master.
constexpr auto peer_exchange_timeout = std::chrono::minutes(30);

std::atomic<bool> stop_requested{false};

extern "C" void on_stop_signal(int) {
  stop_requested = true;
}

bool succeeded(const pb::WorkerExit& exit) {
  return exit.outcome() == pb::WORKER_OUTCOME_COMPLETED || exit.outcome() == pb::WORKER_OUTCOME_STOPPED;
}

/// Reports how the run ended (the chief always, other workers of a distributed run their
/// failures) and leaves at once.
[[noreturn]] int finish(worker_connection& link, const pb::WorkerExit& exit) {
  try {
    if (exit.rank() == 0 || !succeeded(exit))
      link.call(exit, "the exit report");
  } catch (const std::exception& e) {
    std::cerr << "worker: the exit report did not reach the master: " << e.what() << std::endl;
  }
  // Nothing is left to do: skip the actor system's orderly shutdown (joining
  // its threads, closing the connection politely), which the agent would wait
  // for before it could report the container's exit.
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(succeeded(exit) ? 0 : 1);
}

} // namespace

int run_worker(const worker_options& opts, std::unique_ptr<worker_connection> early_link) {
  std::signal(SIGTERM, on_stop_signal);
  auto [host, port] = split_host_port(opts.master, "--master");
  auto link_holder = early_link ? std::move(early_link) : std::make_unique<worker_connection>(host, port);
  auto& link = *link_holder;
  pb::WorkerHello hello;
  hello.set_allocation_id(opts.allocation_id);
  hello.set_trial_id(opts.trial_id);
  hello.set_pid(::getpid());
  hello.set_rank(opts.rank);
  if (const char* token = std::getenv("DET_ALLOCATION_TOKEN"))
    hello.set_allocation_token(token);  // the agent gave it: it proves the run is this worker's
  pb::TrialSpec spec;
  std::string failure;
  bool connected = false, refused = false;
  for (int i = 0; i < connect_attempts && !connected && !refused; ++i) {
    connected = link.connect(hello, spec, failure, refused);
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
  std::optional<worker_reporter> reporter;
  try {
    auto cfg = config::parse_experiment_config(spec.config(), "experiment " + std::to_string(spec.experiment_id()));
    if (!cfg.harness_entrypoint()) {
      container_place place{opts.rank, {peer_address(host, port)}};
      if (opts.world_size > 1)
        place.addresses = container_addresses(link, spec.allocation_id(), opts.rank, opts.world_size,
                                              place.addresses.front(),
                                              std::chrono::duration_cast<std::chrono::milliseconds>(peer_connect_timeout));
      run_core_api_trial(link, spec, cfg, place, stop_requested, exit);
      return finish(link, exit);
    }
    run_directory workdir(spec);
    auto plan = make_training_plan(spec, cfg, workdir.path());
    std::cout << "trial " << spec.trial_id() << ": training " << cfg.entrypoint.front() << " to "
              << plan.length << " " << config::to_string(from_proto(spec.validate_after_unit())) << " with hyperparameters "
              << spec.hparams() << std::endl;
    // Only the chief reports, so only the chief writes TensorBoard's events.
    reporter.emplace(link, spec.trial_id(), spec.allocation_id(), stop_requested,
                     opts.rank == 0 ? open_event_file(spec) : nullptr);
    std::unique_ptr<harness::collective> peers;
    if (opts.world_size > 1) {
      worker_rendezvous rendezvous{link, spec.allocation_id()};
      const auto connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(peer_connect_timeout);
      const auto exchange_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(peer_exchange_timeout);
      // The agent gives each worker of a run on GPU slots its slot's device (and a run on CPU slots
      // none): NCCL on it there; otherwise shared memory when every worker is on this host and
      // none declines it, Gloo over TCP when not.
      const char* gpus = std::getenv("CUDA_VISIBLE_DEVICES");
      const char* transport = "NCCL";
      if (gpus && *gpus) {
        peers = harness::connect_nccl(opts.rank, opts.world_size, 0, rendezvous, connect_timeout, exchange_timeout);
      } else {
        peers = harness::join_shared_memory(opts.rank, opts.world_size, rendezvous, connect_timeout, exchange_timeout);
        transport = "shared memory";
        if (!peers) {
          peers = harness::connect_gloo(opts.rank, opts.world_size, rendezvous, peer_address(host, port),
                                        connect_timeout, exchange_timeout);
          transport = "Gloo";
        }
      }
      std::cout << "trial " << spec.trial_id() << ": worker " << opts.rank << " of " << opts.world_size
                << " connected to the others over " << transport << std::endl;
      plan.peers = peers.get();
    }
    bool stopped = harness::run_trial(plan, *reporter);
    exit.set_outcome(stopped ? pb::WORKER_OUTCOME_STOPPED : pb::WORKER_OUTCOME_COMPLETED);
    std::cout << "trial " << spec.trial_id() << (stopped ? ": stopped on request" : ": finished training")
              << std::endl;
  } catch (const harness::invalid_hyperparameters& e) {
    std::cerr << "error: invalid hyperparameters: " << e.what() << std::endl;
    exit.set_outcome(pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS);
    exit.set_message(std::string("invalid hyperparameters: ") + e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    exit.set_outcome(pb::WORKER_OUTCOME_ERRORED);
    exit.set_message(e.what());
  } catch (...) {  // a trial library may throw anything
    std::cerr << "error: the trial threw something that is not a std::exception" << std::endl;
    exit.set_outcome(pb::WORKER_OUTCOME_ERRORED);
    exit.set_message("the trial threw something that is not a std::exception");
  }
  // Every report still waiting reaches the master before the exit does, whatever ended the run;
  // a run that went well but whose reports the master refused has failed.
  if (reporter) {
    try {
      reporter->drain();
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << std::endl;
      if (exit.outcome() == pb::WORKER_OUTCOME_COMPLETED || exit.outcome() == pb::WORKER_OUTCOME_STOPPED) {
        exit.set_outcome(pb::WORKER_OUTCOME_ERRORED);
        exit.set_message(e.what());
      }
    }
  }
  return finish(link, exit);
}

} // namespace det::runtime
