// One allocation: slots from the pool for one run of a trial or for a task, and the containers
// started on them: one, or one per agent when a trial needs more slots than one agent has. A
// container holds one worker, or one per GPU slot for a LibTorch run on GPUs (master/scheduling/worker_layout);
// a run's workers train together, worker 0 the chief.
//
//   requested --(pool answers)--> launching --(every ContainerStarted)--> running
//       |                            |                                      |
//       +---------(kill)-------------+------(every ContainerExited)---------+--> (the trial hears
//                                                                               one ContainerExited)
//   A reclaimed run (a master restart) goes from requested straight to running.
//
// On exit the slots go back to the pool and the trial hears how it ended. One container of
// several that fails (or is lost) takes the others down: they cannot train without it.

#include <algorithm>
#include <csignal>
#include <optional>

#include "master/scheduling/container_exit.hpp"
#include "auth/task_user.hpp"
#include "master/spawn.hpp"
#include "node/state_text.hpp"
#include "caf/all.hpp"
#include "messages/caf_types.hpp"

namespace det {
namespace {

struct container_part {
  allocation_part where;
  bool started = false;
  bool exited = false;
};

enum class allocation_phase : uint8_t { requested, launching, running };

const char* to_string(allocation_phase x) {
  switch (x) {
    case allocation_phase::requested: return "requested";
    case allocation_phase::launching: return "launching";
    case allocation_phase::running: return "running";
  }
  return "requested";
}

struct allocation_state {
  static inline const char* name = "allocation";
  allocation_ask ask;
  pb::StartContainer container;  // what each part starts, but for its slots, ranks and world size
  allocation_listener trial_handle;  // the trial or task it is for
  resource_pool_actor pool;
  std::vector<container_part> parts;  // empty until the pool places us
  std::optional<pb::ContainerExited> failure;  // the first container that did not end well
  bool lost = false;                  // a container's agent was lost: the run ends transient
  allocation_phase phase = allocation_phase::requested;
  int32_t pending_kill = 0;  // killed while still waiting for slots, or for its containers to be reclaimed
  int64_t pending_grace_s = 0;
  bool reclaiming = false;   // its containers outlived a master restart: they are taken back, not launched
};

using self_ptr = allocation_actor::stateful_pointer<allocation_state>;

// How long the owner's Unix user may take to read before the run fails to start.
constexpr auto accounts_timeout = std::chrono::seconds(30);

void finish(self_ptr self, pb::ContainerExited exited) {
  self->send(self->state.pool, release_atom::value, self->state.ask.id);
  self->send(self->state.trial_handle, std::move(exited));
  self->quit();
}

// Signals the containers (SIGKILL follows a gentler signal after grace_s; 0: the agent's 30 s),
// or gives the request back while it still waits for slots.
void kill(self_ptr self, int32_t signal, int64_t grace_s) {
  auto& st = self->state;
  if (st.parts.empty()) {
    st.pending_kill = signal;
    st.pending_grace_s = grace_s;
    // Containers that run still but are not reclaimed yet get the signal once they are.
    if (st.reclaiming) return;
    // Still queued: give the request back; the pool's error answer ends us.
    self->send(st.pool, release_atom::value, st.ask.id);
    return;
  }
  for (const auto& part : st.parts)
    if (!part.exited) self->send(part.where.agent, kill_container(st.ask.id, signal, grace_s));
}

// One container ended. The run is over when all have; until then a failure stops the rest.
void on_exit(self_ptr self, pb::ContainerExited exited) {
  auto& st = self->state;
  container_part* part = nullptr;
  for (auto& p : st.parts)
    if (!p.exited && p.where.agent_id == exited.agent_id()) part = &p;
  if (!part) return;  // a second report of the same exit
  part->exited = true;
  st.lost = st.lost || exited.cause() == pb::EXIT_CAUSE_LOST_WITH_AGENT;
  if (!ended_well(exited) && !st.failure) {
    if (st.parts.size() > 1)
      exited.set_message("on agent " + part->where.agent_id + ", one of the run's " + std::to_string(st.parts.size()) +
                         ": " + describe_exit(exited));
    st.failure = exited;
    for (const auto& other : st.parts)
      if (!other.exited) self->send(other.where.agent, kill_container(st.ask.id));
  }
  for (const auto& p : st.parts)
    if (!p.exited) return;
  pb::ContainerExited result = st.failure ? *st.failure : exited;
  if (st.lost)  // a lost agent took the others down: the cluster's failure
    result.set_cause(pb::EXIT_CAUSE_LOST_WITH_AGENT);
  finish(self, std::move(result));
}

// The pool placed us: launch a container on each part (or take back those that run already).
void on_placed(self_ptr self, const allocation_parts& parts, bool reclaim) {
  auto& st = self->state;
  if (st.pending_kill != 0 && !reclaim) {  // killed while the placement was on its way
    finish(self, exit_without_container(st.ask.id, "", "the allocation was killed before its container started",
                                        pb::EXIT_CAUSE_NEVER_STARTED));
    return;
  }
  if (!reclaim) {
    std::vector<std::string> agents;
    for (const auto& part : parts) agents.push_back(part.agent_id);
    self->send(st.trial_handle, launch_atom::value, std::move(agents));
  }
  std::vector<run_part_slots> slots;
  for (const auto& part : parts) slots.push_back({part.kind, static_cast<int32_t>(part.slot_ids.size())});
  const auto layout = lay_out_workers(slots, st.container.runtime());
  for (size_t index = 0; index < parts.size(); ++index) {
    const auto& where = parts[index];
    // Until the proxy knows our container, only its death can tell us it is gone.
    self->monitor(where.agent);
    st.parts.push_back({where});
    if (reclaim) {
      self->send(where.agent, register_atom::value, st.ask.id, where.slot_ids, container_listener{self});
      continue;
    }
    pb::StartContainer start = st.container;
    start.set_allocation_id(st.ask.id);
    for (auto s : where.slot_ids) start.add_slot_ids(s);
    start.set_rank(layout.parts[index].first_rank);
    start.set_workers(layout.parts[index].workers);
    start.set_world_size(layout.world_size);
    self->send(where.agent, launch_atom::value, std::move(start), container_listener{self});
  }
  st.phase = reclaim ? allocation_phase::running : allocation_phase::launching;
  if (st.pending_kill != 0)  // killed while its containers were being reclaimed: they end as asked
    for (const auto& part : st.parts)
      self->send(part.where.agent, kill_container(st.ask.id, st.pending_kill, st.pending_grace_s));
}

// Asks the pool for slots, or for a reclaimed run's containers back.
void request_slots(self_ptr self) {
  auto& st = self->state;
  const bool reclaim = st.reclaiming;
  // Waiting for slots has no deadline: the pool answers when it places us or
  // when we release the request. A reclaimed run's containers already run: the pool answers
  // once agents report them, or gives up after agent_reconnect_wait.
  auto placed = reclaim ? self->request(st.pool, caf::infinite, reclaim_atom::value, st.ask)
                        : self->request(st.pool, caf::infinite, allocate_atom::value, st.ask);
  std::move(placed).then([=](const allocation_parts& parts) { on_placed(self, parts, reclaim); },
                         [=](caf::error& e) {
                           // A reclaim the master's restart lost is not the trial's failure.
                           const auto cause = e == errc::unschedulable ? pb::EXIT_CAUSE_UNSCHEDULABLE
                                              : reclaim               ? pb::EXIT_CAUSE_LOST_WITH_AGENT
                                                                      : pb::EXIT_CAUSE_NEVER_STARTED;
                           finish(self, exit_without_container(
                                            self->state.ask.id, "",
                                            e == caf::sec::request_receiver_down
                                                ? "the allocation was released before it got slots"
                                                : error_sentence(self->system(), e),
                                            cause));
                         });
}

allocation_actor::behavior_type allocation_impl(self_ptr self, allocation_ask ask, pb::StartContainer container,
                                                allocation_listener trial_handle, resource_pool_actor pool,
                                                bool reclaim, accounts_actor accounts, int64_t task_uid_base) {
  auto& st = self->state;
  self->set_down_handler([=](const caf::down_msg& dm) {
    for (const auto& part : self->state.parts) {
      if (part.exited || dm.source != part.where.agent.address()) continue;
      on_exit(self, exit_without_container(self->state.ask.id, part.where.agent_id,
                                           "agent " + part.where.agent_id + " was lost",
                                           pb::EXIT_CAUSE_LOST_WITH_AGENT));
      return;
    }
  });
  st.ask = std::move(ask);
  st.container = std::move(container);
  st.reclaiming = reclaim;
  st.trial_handle = std::move(trial_handle);
  st.pool = std::move(pool);
  // The run's Unix user comes first (the owner's link may have changed since its last run); a
  // reclaimed run's containers run already, as whoever they were started as.
  if (reclaim || st.container.task_user().owner_id() == 0) {
    request_slots(self);
  } else {
    self->request(accounts, accounts_timeout, get_atom::value, user_id{st.container.task_user().owner_id()})
        .then(
            [=](const storage::stored_user& owner) {
              auto& st = self->state;
              if (st.pending_kill != 0)  // killed while its user was read: the pool never heard of it
                return finish(self, exit_without_container(st.ask.id, "",
                                                           "the allocation was killed before its container started",
                                                           pb::EXIT_CAUSE_NEVER_STARTED));
              std::optional<auth::task_user> link;
              if (owner.user.has_agent_user_group()) {
                const auto& l = owner.user.agent_user_group();
                link = auth::task_user{l.agent_uid(), l.agent_gid(), l.agent_user(), l.agent_group()};
              }
              auto who = auth::task_user_of(owner.user.id(), link, task_uid_base);
              if (auto* why = std::get_if<std::string>(&who))
                return finish(self, exit_without_container(st.ask.id, "", *why, pb::EXIT_CAUSE_NEVER_STARTED));
              const auto& user = std::get<auth::task_user>(who);
              auto* task_user = st.container.mutable_task_user();
              task_user->set_uid(static_cast<uint32_t>(user.uid));
              task_user->set_gid(static_cast<uint32_t>(user.gid));
              task_user->set_user(user.user);
              task_user->set_group(user.group);
              request_slots(self);
            },
            [=](caf::error& e) {
              finish(self, exit_without_container(self->state.ask.id, "",
                                                  "cannot tell which Unix user the run's owner runs as: " +
                                                      error_sentence(self->system(), e),
                                                  pb::EXIT_CAUSE_NEVER_STARTED));
            });
  }
  return {
      [=](preempt_atom) {
        if (!self->state.parts.empty())  // only started containers have slots to give back
          self->send(self->state.trial_handle, preempt_atom::value);
      },
      [=](pb::ContainerStarted& started) {
        auto& st = self->state;
        for (auto& part : st.parts)
          if (part.where.agent_id == started.agent_id()) part.started = true;
        if (std::all_of(st.parts.begin(), st.parts.end(), [](const container_part& p) { return p.started; }))
          st.phase = allocation_phase::running;
        self->send(st.trial_handle, std::move(started));
      },
      [=](pb::ContainerExited& exited) { on_exit(self, std::move(exited)); },
      [=](pb::ContainerActivity& activity) { self->send(self->state.trial_handle, std::move(activity)); },
      [=](kill_atom, int32_t signal) { kill(self, signal, 0); },
      [=](kill_atom, int32_t signal, int64_t grace_s) { kill(self, signal, grace_s); },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        std::string agents, slots;
        for (const auto& part : st.parts) {
          agents += (agents.empty() ? "" : ",") + part.where.agent_id;
          for (auto s : part.where.slot_ids) slots += (slots.empty() ? "" : ",") + std::to_string(s);
        }
        return state_text{self}
            .add("id", st.ask.id)
            .add("for", st.container.task_id().empty() ? "trial " + std::to_string(st.container.trial_id())
                                                        : "task " + st.container.task_id())
            .add("phase", to_string(st.phase))
            .add("agents", agents.empty() ? "(none yet)" : agents)
            .add("slots", slots.empty() ? "(none yet)" : slots)
            .str();
      },
  };
}

} // namespace

allocation_actor spawn_allocation(caf::actor_system& sys, const allocation_ask& ask, const pb::StartContainer& container,
                                  allocation_listener listener, const resource_pool_actor& pool, bool reclaim,
                                  const accounts_actor& accounts, int64_t task_uid_base) {
  return sys.spawn(allocation_impl, ask, container, std::move(listener), pool, reclaim, accounts, task_uid_base);
}

} // namespace det
