// One allocation: slots from the pool for one run of a trial, and the one
// container started on them.
//
//   requested --(pool answers)--> launching --(ContainerStarted)--> running
//       |                            |                                 |
//       +---------(kill)-------------+----(ContainerExited)------------+--> done
//
// On exit the slots go back to the pool and the trial hears how it ended.

#include <csignal>

#include "actors/spawn.hpp"
#include "actors/state_text.hpp"
#include "caf/all.hpp"
#include "messages/caf_types.hpp"

namespace det {
namespace {

struct allocation_state {
  static inline const char* name = "allocation";
  std::string id;
  pb::Trial trial;
  int32_t slots = 0;
  caf::actor trial_handle;
  resource_pool_actor pool;
  agent_proxy_actor agent;
  std::string agent_id;
  std::vector<int32_t> slot_ids;
  std::string phase = "requested";
  int32_t pending_kill = 0;  // killed while still waiting for slots
};

using self_ptr = allocation_actor::stateful_pointer<allocation_state>;

void finish(self_ptr self, pb::ContainerExited exited) {
  self->send(self->state.pool, release_atom::value, self->state.id);
  caf::anon_send(self->state.trial_handle, std::move(exited));
  self->quit();
}

// Signals the container (SIGKILL follows a gentler signal after grace_s; 0: the agent's 30 s), or
// gives the request back while it still waits for slots.
void kill(self_ptr self, int32_t signal, int64_t grace_s) {
  auto& st = self->state;
  if (!st.agent) {
    // Still queued: give the request back; the pool's error answer ends us.
    st.pending_kill = signal;
    self->send(st.pool, release_atom::value, st.id);
    return;
  }
  pb::KillContainer kill;
  kill.set_allocation_id(st.id);
  kill.set_signal(signal);
  kill.set_grace_s(grace_s);
  self->send(st.agent, std::move(kill));
}

allocation_actor::behavior_type allocation_impl(self_ptr self, std::string id, pb::Trial trial,
                                                int32_t slots, caf::actor trial_handle,
                                                resource_pool_actor pool, bool reclaim) {
  auto& st = self->state;
  self->set_down_handler([=](const caf::down_msg& dm) {
    if (dm.source != self->state.agent.address())
      return;
    pb::ContainerExited lost;
    lost.set_allocation_id(self->state.id);
    lost.set_exit_code(-1);
    lost.set_message("agent " + self->state.agent_id + " was lost");
    lost.set_transient(true);
    finish(self, std::move(lost));
  });
  st.id = std::move(id);
  st.trial = std::move(trial);
  st.slots = slots;
  st.trial_handle = std::move(trial_handle);
  st.pool = std::move(pool);
  // Waiting for slots has no deadline: the pool answers when it places us or
  // when we release the request. A reclaimed run's container already runs: the pool answers
  // once an agent reports it, or gives up after agent_reconnect_wait.
  auto job = std::to_string(st.trial.experiment_id());
  auto placed = reclaim ? self->request(st.pool, caf::infinite, reclaim_atom::value, st.id, job, st.slots)
                        : self->request(st.pool, caf::infinite, allocate_atom::value, st.id, job, st.slots);
  std::move(placed).then(
          [=](const std::string& agent_id, const std::vector<int32_t>& slot_ids,
              agent_proxy_actor agent) {
            auto& st = self->state;
            if (st.pending_kill != 0) {  // killed while the placement was on its way
              if (reclaim) {  // its worker runs: stop it
                pb::KillContainer kill;
                kill.set_allocation_id(st.id);
                kill.set_signal(SIGKILL);
                self->send(agent, std::move(kill));
              }
              pb::ContainerExited exited;
              exited.set_allocation_id(st.id);
              exited.set_exit_code(-1);
              exited.set_message("the allocation was killed before its container started");
              finish(self, std::move(exited));
              return;
            }
            // Until the proxy knows our container, only its death can tell us it is gone.
            self->monitor(agent);
            st.agent_id = agent_id;
            st.slot_ids = slot_ids;
            st.agent = agent;
            if (reclaim) {
              st.phase = "running";
              self->send(agent, register_atom::value, st.id, slot_ids, caf::actor_cast<caf::actor>(self));
              return;
            }
            st.phase = "launching";
            pb::StartContainer start;
            start.set_allocation_id(st.id);
            start.set_trial_id(st.trial.id());
            start.set_experiment_id(st.trial.experiment_id());
            for (auto s : slot_ids)
              start.add_slot_ids(s);
            self->send(agent, launch_atom::value, std::move(start),
                       caf::actor_cast<caf::actor>(self));
          },
          [=](caf::error& e) {
            pb::ContainerExited exited;
            exited.set_allocation_id(self->state.id);
            exited.set_exit_code(-1);
            exited.set_message(e == caf::sec::request_receiver_down ? "the allocation was released before it got slots"
                                                                    : error_sentence(self->system(), e));
            exited.set_transient(reclaim);  // the master's restart lost it, not the trial
            finish(self, std::move(exited));
          });
  return {
      [=](preempt_atom) {
        if (self->state.agent)  // only a started container has slots to give back
          caf::anon_send(self->state.trial_handle, preempt_atom::value);
      },
      [=](pb::ContainerStarted& started) {
        self->state.phase = "running";
        caf::anon_send(self->state.trial_handle, std::move(started));
      },
      [=](pb::ContainerExited& exited) { finish(self, std::move(exited)); },
      [=](kill_atom, int32_t signal) { kill(self, signal, 0); },
      [=](kill_atom, int32_t signal, int64_t grace_s) { kill(self, signal, grace_s); },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        std::string slots;
        for (auto s : st.slot_ids)
          slots += (slots.empty() ? "" : ",") + std::to_string(s);
        return state_text{self}
            .add("id", st.id)
            .add("trial", st.trial.id())
            .add("phase", st.phase)
            .add("agent", st.agent_id.empty() ? "(none yet)" : st.agent_id)
            .add("slots", slots.empty() ? "(none yet)" : slots)
            .str();
      },
  };
}

} // namespace

allocation_actor spawn_allocation(caf::actor_system& sys, const std::string& allocation_id,
                                  const pb::Trial& trial, int32_t slots, caf::actor trial_handle,
                                  const resource_pool_actor& pool, bool reclaim) {
  return sys.spawn(allocation_impl, allocation_id, trial, slots, std::move(trial_handle), pool, reclaim);
}

} // namespace det
