#pragma once
// The gates' own protocols: what their trial or agent proxy tells them beside the endpoint they
// are to other processes (messages/interfaces.hpp).

#include <string>

#include "caf/typed_actor.hpp"
#include "master/atoms.hpp"
#include "messages/interfaces.hpp"

namespace det {

/// A trial's gate: its workers' endpoint. It passes on what carries the current run's token,
/// which only its trial sets ("" while no run may report).
using run_gate_actor = trial_endpoint::extend<caf::reacts_to<update_atom, std::string>>;

/// An agent's gate: its agent's endpoint, and the only actor that sends to the agent process.
/// Container commands and a reconnected agent's handle with its new session token are taken
/// from its proxy only.
using agent_gate_actor = agent_endpoint::extend<
    caf::reacts_to<pb::StartContainer>,
    caf::reacts_to<pb::KillContainer>,
    caf::reacts_to<agent_actor, std::string>>;

} // namespace det
