// A resource pool: agents join it with their slots, allocations ask it for
// slots and get an answer once the scheduling policy places them.

#include <map>

#include "actors/spawn.hpp"
#include "actors/state_text.hpp"
#include "caf/all.hpp"
#include "scheduler/fifo_first_fit.hpp"

namespace det {
namespace {

using placement = caf::typed_response_promise<std::string, std::vector<int32_t>, agent_proxy_actor>;

struct pool_state {
  static inline const char* name = "resource_pool";
  std::string pool_name;
  scheduler::fifo_first_fit policy;
  std::map<std::string, agent_proxy_actor> agents;
  std::map<std::string, placement> waiting;  // allocation id -> its pending answer
};

using self_ptr = resource_pool_actor::stateful_pointer<pool_state>;

void schedule(self_ptr self) {
  auto& st = self->state;
  for (auto& a : st.policy.schedule()) {
    auto w = st.waiting.find(a.allocation_id);
    if (w == st.waiting.end()) {  // its allocation went away meanwhile
      st.policy.release(a.allocation_id);
      continue;
    }
    std::vector<int32_t> slots(a.slot_ids.begin(), a.slot_ids.end());
    w->second.deliver(a.agent_id, std::move(slots), st.agents[a.agent_id]);
    st.waiting.erase(w);
  }
}

resource_pool_actor::behavior_type pool_impl(self_ptr self, std::string name) {
  self->state.pool_name = std::move(name);
  return {
      [=](allocate_atom, const std::string& allocation_id, int32_t slots) {
        auto rp = self->make_response_promise<std::string, std::vector<int32_t>, agent_proxy_actor>();
        self->state.waiting.emplace(allocation_id, rp);
        self->state.policy.request(allocation_id, slots);
        schedule(self);
        return rp;
      },
      [=](release_atom, const std::string& allocation_id) {
        auto w = self->state.waiting.find(allocation_id);
        if (w != self->state.waiting.end()) {
          w->second.deliver(caf::make_error(caf::sec::request_receiver_down));
          self->state.waiting.erase(w);
        }
        self->state.policy.release(allocation_id);
        schedule(self);
      },
      [=](add_atom, const std::string& agent_id, const std::vector<int32_t>& slots,
          agent_proxy_actor proxy) {
        self->state.policy.add_agent(agent_id, std::vector<int>(slots.begin(), slots.end()));
        self->state.agents[agent_id] = std::move(proxy);
        schedule(self);
      },
      [=](remove_atom, const std::string& agent_id, const caf::actor_addr& proxy) {
        // A proxy replaced by a re-registration must not remove its successor.
        auto it = self->state.agents.find(agent_id);
        if (it == self->state.agents.end() || it->second.address() != proxy)
          return;
        // The proxy tells each of the agent's allocations that it was lost.
        self->state.policy.remove_agent(agent_id);
        self->state.agents.erase(agent_id);
        schedule(self);
      },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        return state_text{self}
            .add("name", st.pool_name)
            .add("agents", st.agents.size())
            .add("running allocations", st.policy.running())
            .add("queued allocations", st.policy.queued())
            .str() + st.policy.describe();
      },
  };
}

} // namespace

resource_pool_actor spawn_resource_pool(caf::actor_system& sys, const std::string& name) {
  return sys.spawn(pool_impl, name);
}

} // namespace det
