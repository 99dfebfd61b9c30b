#pragma once
// The protocols of commands, shells, notebooks and TensorBoards: a task and the registry of them.

#include <vector>

#include "caf/typed_actor.hpp"
#include "master/atoms.hpp"
#include "master/scheduling/scheduling_protocol.hpp"

namespace det {

/// A command, shell, notebook or TensorBoard: its allocation's events, and its owner's kill.
using task_actor = allocation_listener::extend<
    caf::reacts_to<kill_atom>,
    caf::replies_to<proxy_atom>::with<pb::Task>,  // the task as a request to its service sees it
    caf::reacts_to<tick_atom>,                     // time to check its idle timeout
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Every task: stores them on a PostgreSQL connection of its own, starts them, and takes back
/// those a master restart interrupted. Who may see or kill one is the gateway's to decide.
using tasks_actor = caf::typed_actor<
    // kind, owner_id, description, config, slots, resource_pool and entrypoint set; its context (a tar archive)
    caf::replies_to<create_atom, pb::Task, std::string>::with<pb::Task>,
    caf::replies_to<list_atom, pb::TaskKind>::with<std::vector<pb::Task>>,  // UNSPECIFIED: every kind
    caf::replies_to<get_atom, std::string>::with<pb::Task>,                 // errc::not_found
    caf::replies_to<kill_atom, std::string>::with<bool>,                    // false: it had ended
    // A request to a running task's service: the task as it is now (errc::not_found unless it runs).
    caf::replies_to<proxy_atom, std::string>::with<pb::Task>,
    // The gateway let a request through to the task `allocation_id` names: its idle clock restarts.
    caf::reacts_to<pb::ContainerActivity>,
    caf::replies_to<list_atom>::with<pb::GetTaskSummariesResponse>,         // tasks and running trials
    caf::reacts_to<update_atom, pb::Task>>;                                 // a task's new state, from its actor

} // namespace det
