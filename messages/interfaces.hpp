#pragma once
// Typed interfaces of every actor that is reached across a process boundary.
// Both ends of a link name the same alias; CAF checks the signatures when a
// node connects, so master, agents and workers must be the same build.
// Include this only from actor implementations: it pulls in CAF.

#include <cstdint>
#include <string>

#include "caf/atom.hpp"
#include "caf/replies_to.hpp"
#include "caf/typed_actor.hpp"

#include "messages/api.pb.h"
#include "messages/cluster.pb.h"
#include "messages/common.pb.h"
#include "messages/pb_inspect.hpp"
#include "messages/searcher.pb.h"
#include "messages/trial.pb.h"

namespace det {

/// Asks an actor to describe the state it holds in memory (admin REPL).
using inspect_atom = caf::atom_constant<caf::atom("inspect")>;
/// Asks the master for the live actors it knows of.
using actors_atom = caf::atom_constant<caf::atom("actors")>;

/// The agent process: the master starts and signals worker processes there.
using agent_actor = caf::typed_actor<
    caf::reacts_to<pb::StartContainer>,
    caf::reacts_to<pb::KillContainer>,
    caf::replies_to<inspect_atom>::with<std::string>>;

/// The master-side agent as its agent process sees it. Every message carries the session token
/// of the agent's welcome: CAF lets any peer address an actor whose handle crossed the network,
/// so the token, not the handle, says who sent it.
using agent_endpoint = caf::typed_actor<
    caf::reacts_to<pb::ContainerStarted, std::string>,
    caf::reacts_to<pb::ContainerExited, std::string>,
    caf::reacts_to<pb::ContainerActivity, std::string>,
    caf::reacts_to<pb::LogBatch, std::string>>;

/// The master-side trial as its worker process sees it; every message carries the run's
/// allocation token. A MetricBatch is answered with the number of reports accepted; the exit
/// report is answered so that the worker knows it arrived before it closes its connection.
using trial_endpoint = caf::typed_actor<
    caf::replies_to<pb::MetricBatch, std::string>::with<int64_t>,
    caf::replies_to<pb::Checkpoint, std::string>::with<bool>,  // recorded once it is committed
    caf::replies_to<pb::WorkerExit, std::string>::with<bool>,
    caf::replies_to<pb::Rendezvous, std::string>::with<pb::Rendezvous>>;

/// The master's front door, published on its actor port: every message carries its proof (the
/// agent token, the run's allocation token, an admin's bearer token).
using master_actor = caf::typed_actor<
    caf::replies_to<pb::AgentHello, agent_actor>::with<pb::AgentWelcome, agent_endpoint>,
    caf::replies_to<pb::WorkerHello>::with<pb::TrialSpec, trial_endpoint>,
    // The admin REPL's questions, each with an admin's bearer token (the REPL's node is never admitted).
    caf::replies_to<actors_atom, std::string>::with<std::string>,
    caf::replies_to<inspect_atom, std::string, std::string, std::string>::with<std::string>>;  // kind, id, token

} // namespace det
