#pragma once
// The protocols of experiments: the front door, experiments, their searchers and trials, and the
// checkpoint collector. What a trial tells its experiment goes to trial_listener, which the
// experiment's interface extends.

#include <cstdint>
#include <string>
#include <vector>

#include "caf/typed_actor.hpp"
#include "config/length.hpp"
#include "master/atoms.hpp"
#include "master/experiments/searcher_messages.hpp"
#include "messages/interfaces.hpp"
#include "model/ids.hpp"

namespace det {

/// Deletes checkpoint files on its own connection: an ended experiment's garbage, or one on request.
using checkpoint_collector_actor = caf::typed_actor<
    caf::replies_to<remove_atom, std::string>::with<bool>,  // by uuid; false: no such checkpoint; invalid_input if registered
    // An ended experiment with its files and rows; invalid_input while it runs or a model version or
    // another experiment's trial points at one of its checkpoints.
    caf::replies_to<remove_atom, experiment_id>::with<bool>,
    caf::reacts_to<gc_atom, experiment_id, std::string>>;   // the experiment's config TOML

/// What a trial tells the experiment that owns it.
using trial_listener = caf::typed_actor<
    caf::reacts_to<validated_atom, int64_t, double, int64_t>,  // request id, searcher metric, length
    caf::reacts_to<exited_atom, int64_t, pb::State, pb::WorkerOutcome>,  // request id, end, what its worker said
    caf::reacts_to<checkpointed_atom, int64_t, std::string, int64_t>,  // request id, latest checkpoint, its length
    caf::reacts_to<progress_atom, int64_t, double>>;  // request id, the share its process says it trained

/// What a worker reports, once its gate checked the run's token.
using worker_reports = caf::typed_actor<
    caf::replies_to<pb::MetricBatch>::with<int64_t>,
    caf::replies_to<pb::Checkpoint>::with<bool>,
    caf::replies_to<pb::WorkerExit>::with<bool>,
    caf::replies_to<pb::Rendezvous>::with<pb::Rendezvous>>;

/// A trial: what its worker reports, plus its allocation's events.
using trial_actor = worker_reports::extend<
    caf::replies_to<pb::WorkerHello>::with<pb::TrialSpec, trial_endpoint>,
    caf::reacts_to<launch_atom, std::vector<std::string>>,
    caf::reacts_to<pb::ContainerStarted>,
    caf::reacts_to<pb::ContainerActivity>,
    caf::reacts_to<pb::ContainerExited>,
    caf::reacts_to<train_to_atom, config::length>,  // searcher: train to this length
    caf::reacts_to<rung_atom, int32_t>,             // searcher: the rung it trains for
    caf::reacts_to<stop_atom, bool>,                    // searcher: close it; cut short or not
    caf::replies_to<pb::CoreApiCall>::with<pb::CoreApiReply>,
    caf::reacts_to<kill_atom>,
    caf::reacts_to<pause_atom>,
    caf::reacts_to<activate_atom>,
    caf::reacts_to<preempt_atom>,  // checkpoint, give the slots back, queue again
    caf::replies_to<inspect_atom>::with<std::string>>;

/// An experiment's search (searcher::searcher), as an actor of its own linked to its experiment:
/// the experiment tells it what happened, in order, and carries out what it answers.
using searcher_actor = caf::typed_actor<
    caf::replies_to<search_request>::with<search_step>,
    // custom: what its process posted; errc::invalid_input with a sentence for a bad operation
    caf::replies_to<pb::PostSearcherOperationsRequest>::with<search_step>,
    caf::replies_to<inspect_atom>::with<std::string>>;  // the REPL's inspect searcher N

/// An experiment: asks its searcher, spawns its trials.
using experiment_actor = trial_listener::extend<
    caf::reacts_to<start_atom>,  // begins (or restores) the search, once spawned
    // Answered once applied, its state update handed to persistence before the answer: a read
    // that follows the answer sees the new state.
    caf::replies_to<kill_atom>::with<bool>,
    caf::replies_to<pause_atom>::with<bool>,
    caf::replies_to<activate_atom>::with<bool>,
    caf::replies_to<pb::JobSettings>::with<bool>,  // det experiment set, det job update
    // custom searcher: the events its process has not acknowledged, answered at once (the gateway
    // asks again while there are none), and the operations it posts
    caf::replies_to<searcher_atom, get_atom>::with<pb::GetSearcherEventsResponse>,
    caf::replies_to<pb::PostSearcherOperationsRequest>::with<bool>,
    caf::replies_to<searcher_atom, inspect_atom>::with<std::string>,  // the REPL's inspect searcher N
    caf::replies_to<inspect_atom>::with<std::string>>;

/// The master's front door for its own REST gateway: experiment creation, signals to live
/// experiments and Core API calls. Never published: the network reaches the master only
/// through the gates of master/remote/network_gates.cpp.
using master_front_actor = caf::typed_actor<
    caf::replies_to<pb::CreateExperimentRequest, user_id>::with<pb::CreateExperimentResponse>,  // its owner
    caf::replies_to<kill_atom, experiment_id>::with<bool>,
    caf::replies_to<pause_atom, experiment_id>::with<bool>,
    caf::replies_to<activate_atom, experiment_id>::with<bool>,
    caf::replies_to<experiment_id, pb::JobSettings>::with<bool>,
    // a live experiment's custom searcher (errc::not_found when the experiment is not live)
    caf::replies_to<searcher_atom, experiment_id>::with<pb::GetSearcherEventsResponse>,
    caf::replies_to<experiment_id, pb::PostSearcherOperationsRequest>::with<bool>,
    caf::replies_to<pb::CoreApiCall>::with<pb::CoreApiReply>,  // relayed to the trial
    caf::reacts_to<register_atom, std::string, std::string, caf::actor>>;

} // namespace det
