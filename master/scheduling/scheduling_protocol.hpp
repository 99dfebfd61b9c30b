#pragma once
// The protocols of scheduling: agents (proxy, registry), resource pools, provisioners and
// allocations, with what they tell the trial or task they serve. Handles point downward; what
// travels upward goes to a listener interface (container_listener, allocation_listener).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "caf/actor_addr.hpp"
#include "caf/typed_actor.hpp"
#include "master/atoms.hpp"
#include "master/scheduling/worker_layout.hpp"
#include "messages/interfaces.hpp"

namespace det {

/// What det agent|slot enable|disable [--drain] asks of an agent or one of its slots.
enum class slot_switch : uint8_t {
  enable,   ///< takes new work
  drain,    ///< takes no new work; what runs there finishes
  disable,  ///< takes no new work; what runs there is preempted
};

inline std::string to_string(slot_switch x) {
  return x == slot_switch::enable ? "enable" : x == slot_switch::drain ? "drain" : "disable";
}

/// Hears how the containers it launched on an agent are doing: an allocation.
using container_listener = caf::typed_actor<
    caf::reacts_to<pb::ContainerStarted>,
    caf::reacts_to<pb::ContainerExited>,
    caf::reacts_to<pb::ContainerActivity>>;

/// What an agent process reports, once its gate checked the session token.
using agent_events = caf::typed_actor<
    caf::reacts_to<pb::ContainerStarted>,
    caf::reacts_to<pb::ContainerExited>,
    caf::reacts_to<pb::ContainerActivity>,
    caf::reacts_to<pb::LogBatch>>;

/// The master-side agent: relays container commands to its agent process (through its gate)
/// and container events back to the allocations.
using agent_proxy_actor = agent_events::extend<
    // The agent registered again while this proxy waited for it: it takes its containers back.
    caf::replies_to<pb::AgentHello, agent_actor>::with<pb::AgentWelcome, agent_endpoint>,
    // A new proxy's first welcome: a fresh session token and its gate.
    caf::replies_to<welcome_atom>::with<pb::AgentWelcome, agent_endpoint>,
    caf::reacts_to<expire_atom, int64_t>,  // the reconnect window of that disconnection closed
    caf::reacts_to<launch_atom, pb::StartContainer, container_listener>,
    // An allocation takes back a container the agent kept running across a master restart.
    caf::reacts_to<register_atom, std::string, std::vector<int32_t>, container_listener>,
    caf::reacts_to<pb::KillContainer>,
    caf::replies_to<get_atom>::with<pb::Agent>,
    caf::replies_to<enable_atom, int32_t, slot_switch>::with<bool>,  // slot (-1: all)
    caf::replies_to<inspect_atom>::with<std::string>>;

/// One agent's share of an allocation: its slots there and the agent's master-side proxy. An
/// allocation spans several agents when its trial needs more slots than one has.
struct allocation_part {
  std::string agent_id;
  std::vector<int32_t> slot_ids;
  agent_proxy_actor agent;
  slot_kind kind = slot_kind::cpu;  // the agent's slots' (which decides how many workers it starts)
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, allocation_part& x) {
  return f(caf::meta::type_name("allocation_part"), x.agent_id, x.slot_ids, x.agent, x.kind);
}
using allocation_parts = std::vector<allocation_part>;

/// The settings a pool schedules a job (an experiment) by; priority 0 means the pool's default.
struct job_settings {
  int32_t priority = 0;
  double weight = 1;
  int32_t max_slots = 0;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_settings& x) {
  return f(caf::meta::type_name("job_settings"), x.priority, x.weight, x.max_slots);
}

/// What an allocation asks its pool for.
struct allocation_ask {
  std::string id;          ///< the allocation: "<trial>.<run>", or a task's id
  std::string job;         ///< what the pool schedules it under, as job_id::str() writes it
  int32_t slots = 0;
  bool one_agent = false;  ///< its slots must all be on one agent (a task: one process)
  bool preemptible = true; ///< a task is never preempted (Determined's rule)
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, allocation_ask& x) {
  return f(caf::meta::type_name("allocation_ask"), x.id, x.job, x.slots, x.one_agent, x.preemptible);
}

/// What a pool tells its provisioner after a scheduling pass that changed it: the instances its
/// pending work asks for, and its connected agents by id (true: idle, running nothing).
struct scaling_info {
  int32_t desired_new = 0;
  std::map<std::string, bool> agents;
  bool operator==(const scaling_info& o) const { return desired_new == o.desired_new && agents == o.agents; }
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scaling_info& x) {
  return f(caf::meta::type_name("scaling_info"), x.desired_new, x.agents);
}

/// A pool's provisioner: launches and terminates the pool's elastic agents through its provider.
using provisioner_actor = caf::typed_actor<
    caf::reacts_to<scaling_info>,
    caf::reacts_to<tick_atom>,  // time for a pass
    caf::replies_to<get_atom>::with<pb::Provisioner>,
    caf::replies_to<inspect_atom>::with<std::string>>;

/// A resource pool: answers an allocate request once its scheduler
/// places it, with one part per agent, or with errc::unschedulable when none of its agents could ever
/// hold it; the requester hears preempt_atom when the scheduler wants its slots back.
using resource_pool_actor = caf::typed_actor<
    caf::replies_to<allocate_atom, allocation_ask>::with<allocation_parts>,
    caf::reacts_to<release_atom, std::string>,
    // A restored trial's run: answered once an agent reports that allocation still running (it
    // is adopted where it runs), or with an error after agent_reconnect_wait.
    caf::replies_to<reclaim_atom, allocation_ask>::with<allocation_parts>,
    caf::reacts_to<expire_atom, std::string>,  // that wait for an allocation id is over
    caf::reacts_to<update_atom, std::string, job_settings>,  // a job's settings
    caf::reacts_to<remove_atom, std::string>,                // a job has ended
    // An agent's enabled slots and their kind, and the containers it still runs from before a
    // master restart.
    caf::reacts_to<add_atom, std::string, std::vector<int32_t>, slot_kind, agent_proxy_actor, std::vector<pb::RunningContainer>>,
    caf::reacts_to<remove_atom, std::string, caf::actor_addr>,  // agent id, its proxy
    // Enables or disables an agent (slot -1) or one of its slots; without drain, what runs there
    // is preempted. Answers whether the pool has that agent and slot.
    caf::replies_to<enable_atom, std::string, int32_t, slot_switch>::with<bool>,
    caf::replies_to<list_atom>::with<pb::ResourcePoolInfo, pb::GetJobsResponse>,
    caf::reacts_to<schedule_atom>,  // runs the scheduling pass a change asked for
    caf::reacts_to<provisioner_actor>,  // the pool's provisioner, told its scaling_info from now on
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Knows every agent that registered; spawns their master-side proxies.
using agent_registry_actor = caf::typed_actor<
    caf::replies_to<pb::AgentHello, agent_actor>::with<pb::AgentWelcome, agent_endpoint>,
    // det agent|slot enable|disable: agent id, slot (-1: the agent), enabled, drain; answers
    // whether the agent (and slot) exists.
    caf::replies_to<enable_atom, std::string, int32_t, slot_switch>::with<bool>,
    caf::replies_to<list_atom>::with<pb::GetAgentsResponse>>;

/// One allocation of slots for one run of a trial, or for a task: its containers, one per agent
/// it spans.
using allocation_actor = container_listener::extend<
    caf::reacts_to<preempt_atom>,  // the pool wants the slots back
    caf::reacts_to<kill_atom, int32_t, int64_t>,  // signal, then SIGKILL after this many seconds
    caf::reacts_to<kill_atom, int32_t>,
    caf::replies_to<inspect_atom>::with<std::string>>;

/// What an allocation tells its trial or task: its containers started, the run ended (one
/// ContainerExited for all of them), or the pool wants the slots back.
using allocation_listener = caf::typed_actor<
    caf::reacts_to<launch_atom, std::vector<std::string>>,  // placed: its containers start on these agents
    caf::reacts_to<pb::ContainerStarted>,
    caf::reacts_to<pb::ContainerActivity>,  // a task's service is in use
    caf::reacts_to<pb::ContainerExited>,
    caf::reacts_to<preempt_atom>>;

} // namespace det
