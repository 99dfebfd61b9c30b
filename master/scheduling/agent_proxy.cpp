// The master-side agent. It relays container commands to its agent process and
// routes container events back to the allocations that started them.
//
//   connected --(connection lost)--> waiting --(same agent registers again)--> connected
//                                       |           (reattaches the containers it still runs)
//                                       +--(agent_reconnect_wait passes)--> gone
//
// While it waits, the pool gives the agent no new work. When it is gone, or comes back without
// some of its containers, each lost container's allocation hears a transient exit: its trial
// runs again elsewhere without counting a restart.

#include <csignal>
#include <map>
#include <set>

#include "messages/timestamp.hpp"

#include "master/scheduling/container_exit.hpp"
#include "auth/credentials.hpp"
#include "master/spawn.hpp"
#include "node/state_text.hpp"
#include "caf/all.hpp"
#include "node/log.hpp"

namespace det {
namespace {

struct container {
  container_listener allocation;
  std::vector<int32_t> slots;
  int32_t pid = 0;
};

struct agent_proxy_state {
  static inline const char* name = "agent";
  pb::Agent info;
  agent_actor remote;
  agent_gate_actor gate;  // the agent's endpoint; everything this proxy sends the agent goes through it
  std::string session_token;  // what the agent's messages must carry since it last registered
  master_handles handles;
  caf::actor_addr self_address;
  std::map<std::string, container> containers;  // by allocation id
  int64_t disconnections = 0;  // names the reconnect window a tick belongs to
  std::vector<pb::KillContainer> unsent_kills;  // while the agent is away, for when it returns
  // Exits of containers no allocation has registered yet (it is being reclaimed after a master
  // restart), kept for that allocation.
  std::map<std::string, pb::ContainerExited> early_exits;

  // Runs when the proxy exits (CAF destroys the state before attached
  // functors run): the agent is gone, and so is every container on it.
  ~agent_proxy_state() {
    if (!handles.persistence)
      return;
    info.set_connected(false);
    caf::anon_send(handles.persistence, update_atom::value, info);
    caf::anon_send(handles.pool(info.resource_pool()), remove_atom::value, info.id(), self_address);
    for (auto& [id, c] : containers) caf::anon_send(c.allocation, lost(id, info.id(), "agent " + info.id() + " was lost"));
  }

  static pb::ContainerExited lost(const std::string& allocation_id, const std::string& agent_id, const std::string& why) {
    return exit_without_container(allocation_id, agent_id, why + " while the container was running",
                                  pb::EXIT_CAUSE_LOST_WITH_AGENT);
  }
};

using self_ptr = agent_proxy_actor::stateful_pointer<agent_proxy_state>;

// A container's exit goes to its allocation; one no allocation has registered yet (it is being
// reclaimed after a master restart) is kept for the allocation that will.
void route_exit(self_ptr self, pb::ContainerExited exited) {
  auto& st = self->state;
  exited.set_agent_id(st.info.id());  // an allocation on several agents tells its parts apart by it
  auto it = st.containers.find(exited.allocation_id());
  if (it == st.containers.end()) {
    st.early_exits[exited.allocation_id()] = std::move(exited);
    return;
  }
  caf::anon_send(it->second.allocation, std::move(exited));
  st.containers.erase(it);
}

pb::Agent snapshot(self_ptr self) {
  pb::Agent a = self->state.info;
  for (auto& slot : *a.mutable_slots()) {
    slot.clear_allocation_id();
    for (auto& [id, c] : self->state.containers)
      for (auto s : c.slots)
        if (s == slot.id())
          slot.set_allocation_id(id);
  }
  return a;
}

// The agent (re)registered as `remote`: its gate sends to it from now on and expects a new
// session token on every message from it.
void renew_session(self_ptr self) {
  auto& st = self->state;
  st.session_token = auth::random_secret();
  self->send(st.gate, st.remote, st.session_token);
}

// What the agent is told when it (re)registers: the session token and its gate as its endpoint.
caf::result<pb::AgentWelcome, agent_endpoint> welcome(self_ptr self) {
  auto w = agent_welcome(self->state.handles);
  w.set_session_token(self->state.session_token);
  return {std::move(w), caf::actor_cast<agent_endpoint>(self->state.gate)};
}

agent_proxy_actor::behavior_type agent_proxy_impl(self_ptr self, pb::AgentHello hello, agent_actor remote,
                                                  master_handles handles) {
  auto& st = self->state;
  st.info = hello.agent();
  st.info.set_connected(true);
  st.info.set_enabled(true);
  *st.info.mutable_registered_time() = det::now();
  st.remote = std::move(remote);
  st.handles = std::move(handles);
  st.self_address = self->address();
  st.gate = spawn_agent_gate(self->system(), caf::actor_cast<agent_proxy_actor>(self));
  renew_session(self);
  self->monitor(st.remote);
  self->send(st.handles.persistence, update_atom::value, st.info);
  std::vector<int32_t> slots;
  auto kind = slot_kind::cpu;  // an agent's slots are all GPUs or all CPUs (describe_machine)
  for (auto& s : st.info.slots()) {
    if (s.enabled())
      slots.push_back(s.id());
    if (s.type() == pb::SLOT_TYPE_CUDA)
      kind = slot_kind::cuda;
  }
  // With the workers it kept running while this (restarted) master was away: the pool holds their
  // slots until their restored trials claim them, or kills them.
  self->send(st.handles.pool(st.info.resource_pool()), add_atom::value, st.info.id(), slots, kind, self,
             std::vector<pb::RunningContainer>(hello.running().begin(), hello.running().end()));
  for (const auto& exited : hello.exited())
    route_exit(self, exited);
  self->set_down_handler([=](const caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source != st.remote.address())
      return;
    // Dead or hung (heartbeats): keep its containers for agent_reconnect_wait.
    st.info.set_connected(false);
    self->send(st.handles.persistence, update_atom::value, st.info);
    caf::anon_send(st.handles.pool(st.info.resource_pool()), enable_atom::value, st.info.id(), int32_t{-1},
                   slot_switch::drain);
    logs::warn(logs::component::agent, "lost agent " + st.info.id() + " (" + self->system().render(dm.reason) +
                                           "); keeping " + std::to_string(st.containers.size()) + " containers for " +
                                           std::to_string(st.handles.agent_reconnect_wait_s) + " s");
    self->delayed_send(self, std::chrono::seconds(st.handles.agent_reconnect_wait_s), expire_atom::value,
                       ++st.disconnections);
  });
  return {
      [=](pb::AgentHello& hello, agent_actor remote) -> caf::result<pb::AgentWelcome, agent_endpoint> {
        auto& st = self->state;
        if (st.remote)
          self->demonitor(st.remote.address());
        st.remote = std::move(remote);
        self->monitor(st.remote);
        renew_session(self);
        ++st.disconnections;  // closes the pending window
        st.info.set_connected(true);
        self->send(st.handles.persistence, update_atom::value, st.info);
        // Exits it could not report while away, as they happened; then what it no longer runs is lost.
        for (const auto& exited : hello.exited())
          route_exit(self, exited);
        std::set<std::string> running;
        for (const auto& container : hello.running())
          running.insert(container.allocation_id());
        for (auto it = st.containers.begin(); it != st.containers.end();) {
          if (running.count(it->first)) {
            ++it;
            continue;
          }
          caf::anon_send(it->second.allocation,
                         agent_proxy_state::lost(it->first, st.info.id(), "agent " + st.info.id() + " came back without it"));
          it = st.containers.erase(it);
        }
        // What the agent runs that nobody here knows of belongs to an allocation that is over.
        for (const auto& id : running)
          if (!st.containers.count(id)) {
            self->send(st.gate, kill_container(id));
          }
        caf::anon_send(st.handles.pool(st.info.resource_pool()), enable_atom::value, st.info.id(), int32_t{-1},
                       st.info.enabled() ? slot_switch::enable : slot_switch::drain);  // what det agent enable|disable last said
        for (auto& kill : st.unsent_kills)
          if (st.containers.count(kill.allocation_id()))
            self->send(st.gate, std::move(kill));
        st.unsent_kills.clear();
        logs::info(logs::component::agent, "agent " + st.info.id() + " reconnected with " +
                                               std::to_string(st.containers.size()) + " running containers");
        return welcome(self);
      },
      [=](welcome_atom) { return welcome(self); },
      [=](expire_atom, int64_t window) {
        auto& st = self->state;
        if (st.info.connected() || window != st.disconnections)
          return;
        logs::warn(logs::component::agent, "agent " + st.info.id() + " did not reconnect within " +
                                               std::to_string(st.handles.agent_reconnect_wait_s) + " s");
        for (auto& [id, c] : st.containers)
          caf::anon_send(c.allocation, agent_proxy_state::lost(id, st.info.id(), "agent " + st.info.id() + " did not reconnect within " +
                                                                       std::to_string(st.handles.agent_reconnect_wait_s) + " s"));
        st.containers.clear();
        self->quit();
      },
      [=](launch_atom, pb::StartContainer& start, container_listener allocation) {
        auto& c = self->state.containers[start.allocation_id()];
        c.allocation = std::move(allocation);
        c.slots.assign(start.slot_ids().begin(), start.slot_ids().end());
        self->send(self->state.gate, std::move(start));
      },
      [=](register_atom, const std::string& allocation_id, const std::vector<int32_t>& slots,
          container_listener allocation) {
        auto& st = self->state;
        if (auto early = st.early_exits.find(allocation_id); early != st.early_exits.end()) {
          caf::anon_send(allocation, std::move(early->second));
          st.early_exits.erase(early);
          return;
        }
        auto& c = st.containers[allocation_id];
        c.allocation = std::move(allocation);
        c.slots = slots;
      },
      [=](pb::KillContainer& kill) {
        auto& st = self->state;
        if (st.info.connected())
          self->send(st.gate, std::move(kill));
        else
          st.unsent_kills.push_back(std::move(kill));
      },
      [=](pb::ContainerStarted& started) {
        auto it = self->state.containers.find(started.allocation_id());
        if (it == self->state.containers.end())
          return;
        it->second.pid = started.pid();
        started.set_agent_id(self->state.info.id());
        caf::anon_send(it->second.allocation, std::move(started));
      },
      [=](pb::ContainerExited& exited) { route_exit(self, std::move(exited)); },
      [=](pb::ContainerActivity& activity) {
        auto it = self->state.containers.find(activity.allocation_id());
        if (it != self->state.containers.end()) caf::anon_send(it->second.allocation, std::move(activity));
      },
      [=](pb::LogBatch& batch) {
        for (auto& e : *batch.mutable_entries())
          e.set_agent_id(self->state.info.id());
        self->send(self->state.handles.persistence, std::move(batch));
      },
      [=](get_atom) -> pb::Agent { return snapshot(self); },
      [=](enable_atom a, int32_t slot, slot_switch change) -> caf::result<bool> {
        auto& info = self->state.info;
        const bool enabled = change == slot_switch::enable;
        if (slot < 0) {
          info.set_enabled(enabled);
          info.set_draining(change == slot_switch::drain);
        } else {
          auto* found = static_cast<pb::Slot*>(nullptr);
          for (auto& s : *info.mutable_slots())
            if (s.id() == slot)
              found = &s;
          if (!found)
            return false;
          found->set_enabled(enabled);
        }
        // While the agent is away it stays closed to new work; enabling it takes effect when it
        // returns (the reconnection passes info.enabled() on).
        if (slot < 0 && enabled && !info.connected())
          return true;
        return self->delegate(self->state.handles.pool(info.resource_pool()), a, info.id(), slot, change);
      },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        state_text text{self};
        text.add("id", st.info.id())
            .add("hostname", st.info.hostname())
            .add("resource pool", st.info.resource_pool())
            .add("slots", st.info.slots_size())
            .add("containers", st.containers.size());
        for (auto& [id, c] : st.containers)
          text.add("container " + id, "pid " + std::to_string(c.pid) + ", " +
                                          std::to_string(c.slots.size()) + " slots");
        return text.str();
      },
  };
}

} // namespace

agent_proxy_actor spawn_agent_proxy(caf::actor_system& sys, const pb::AgentHello& hello,
                                    const agent_actor& remote, const master_handles& handles) {
  return sys.spawn(agent_proxy_impl, hello, remote, handles);
}

} // namespace det
