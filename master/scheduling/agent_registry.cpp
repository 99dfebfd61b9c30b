// Every agent that registered with this master. A hello from an agent id that
// is already registered goes to its proxy, which takes the agent back with its containers.

#include <map>
#include <memory>

#include "master/spawn.hpp"
#include "caf/all.hpp"
#include "messages/version.hpp"

namespace det {
namespace {

struct registry_state {
  static inline const char* name = "agent_registry";
  master_handles handles;
  directory_actor directory;
  std::map<std::string, agent_proxy_actor> agents;
};

using self_ptr = agent_registry_actor::stateful_pointer<registry_state>;

constexpr auto list_timeout = std::chrono::seconds(2);

agent_registry_actor::behavior_type registry_impl(self_ptr self, master_handles handles,
                                                  directory_actor directory) {
  self->state.handles = std::move(handles);
  self->state.directory = std::move(directory);
  self->set_down_handler([=](const caf::down_msg& dm) {
    auto& agents = self->state.agents;
    for (auto it = agents.begin(); it != agents.end(); ++it)
      if (it->second.address() == dm.source) {
        agents.erase(it);
        return;
      }
  });
  return {
      [=](pb::AgentHello& hello,
          agent_actor remote) -> caf::result<pb::AgentWelcome, agent_endpoint> {
        auto& st = self->state;
        const auto& id = hello.agent().id();
        if (!st.handles.pool(hello.agent().resource_pool()))
          return make_error(errc::refused,
                                 "agent " + id + " asks for resource pool \"" +
                                     hello.agent().resource_pool() +
                                     "\", which the master's config does not define");
        // A known agent registering again (it reconnected, or its process restarted) goes back to
        // its proxy, which still holds its containers.
        if (auto known = st.agents.find(id); known != st.agents.end())
          return self->delegate(known->second, std::move(hello), std::move(remote));
        auto proxy = spawn_agent_proxy(self->system(), hello, remote, st.handles);
        self->monitor(proxy);
        st.agents[id] = proxy;
        self->send(st.directory, register_atom::value, std::string{"agent"}, id,
                   caf::actor_cast<caf::actor>(proxy));
        return self->delegate(proxy, welcome_atom::value);
      },
      [=](enable_atom a, const std::string& agent_id, int32_t slot, slot_switch change) -> caf::result<bool> {
        auto it = self->state.agents.find(agent_id);
        if (it == self->state.agents.end())
          return false;
        return self->delegate(it->second, a, slot, change);
      },
      [=](list_atom) -> caf::result<pb::GetAgentsResponse> {
        auto rp = self->make_response_promise<pb::GetAgentsResponse>();
        auto out = std::make_shared<std::map<std::string, pb::Agent>>();
        auto pending = std::make_shared<std::size_t>(self->state.agents.size());
        auto finish = [rp, out]() mutable {
          pb::GetAgentsResponse resp;
          for (auto& [id, a] : *out)
            *resp.add_agents() = a;
          rp.deliver(std::move(resp));
        };
        if (*pending == 0) {
          finish();
          return rp;
        }
        for (auto& [id, proxy] : self->state.agents) {
          self->request(proxy, list_timeout, get_atom::value)
              .then(
                  [=](const pb::Agent& a) mutable {
                    (*out)[a.id()] = a;
                    if (--*pending == 0)
                      finish();
                  },
                  [=](caf::error&) mutable {
                    if (--*pending == 0)
                      finish();
                  });
        }
        return rp;
      },
  };
}

} // namespace

pb::AgentWelcome agent_welcome(const master_handles& handles) {
  pb::AgentWelcome welcome;
  welcome.set_master_version(det_version);
  welcome.set_http_port(handles.http_port->load());
  welcome.set_reconnect_wait_s(handles.agent_reconnect_wait_s);
  return welcome;
}

agent_registry_actor spawn_agent_registry(caf::actor_system& sys, const master_handles& handles,
                                          const directory_actor& directory) {
  return sys.spawn(registry_impl, handles, directory);
}

} // namespace det
