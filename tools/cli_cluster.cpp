#include "tools/cli_cluster.hpp"

#include <cstdio>
#include <iostream>

#include "messages/api.pb.h"
#include "messages/json.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {

namespace {

std::string slot_type_name(pb::SlotType type) {
  switch (type) {
    case pb::SLOT_TYPE_CPU:
      return "cpu";
    case pb::SLOT_TYPE_CUDA:
      return "cuda";
    default:
      return "unspecified";
  }
}

} // namespace

int list_agents(rest_client& master, bool json) {
  auto reply = master.get<pb::GetAgentsResponse>("/api/v1/agents");
  if (json) {
    std::cout << det::to_json(reply, true) << '\n';
    return 0;
  }
  table out({"ID", "Hostname", "Pool", "Slots", "Connected", "Enabled", "Registered"});
  for (const auto& agent : reply.agents())
    out.add_row({agent.id(), agent.hostname(), agent.resource_pool(),
                 std::to_string(agent.slots_size()), yes_no(agent.connected()),
                 agent.enabled() ? "yes" : agent.draining() ? "no (draining)" : "no",
                 format_time(agent.registered_time())});
  out.print(std::cout);
  return 0;
}

int list_slots(rest_client& master, bool json) {
  auto agents = master.get<pb::GetAgentsResponse>("/api/v1/agents");
  pb::GetSlotsResponse slots;
  for (const auto& agent : agents.agents())
    for (const auto& slot : agent.slots()) {
      auto* view = slots.add_slots();
      view->set_agent_id(agent.id());
      *view->mutable_slot() = slot;
    }
  if (json) {
    std::cout << det::to_json(slots, true) << '\n';
    return 0;
  }
  // A GPU's memory and UUID (nvidia-smi's), so that an operator can tell the slot's device.
  auto memory = [](int64_t bytes) {
    if (bytes <= 0) return std::string();
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
    return std::string(text);
  };
  table out({"Agent", "Slot", "Type", "Device", "Memory", "UUID", "Enabled", "Allocation"});
  for (const auto& view : slots.slots()) {
    const auto& slot = view.slot();
    const bool gpu = slot.type() == pb::SLOT_TYPE_CUDA;
    out.add_row({view.agent_id(), std::to_string(slot.id()), slot_type_name(slot.type()), slot.device(),
                 gpu ? memory(slot.memory_bytes()) : "", gpu ? slot.uuid() : "", yes_no(slot.enabled()),
                 slot.allocation_id().empty() ? "free" : slot.allocation_id()});
  }
  out.print(std::cout);
  return 0;
}

int print_master_info(rest_client& master, bool json) {
  auto info = master.get<pb::MasterInfo>("/api/v1/master");
  if (json) {
    std::cout << det::to_json(info, true) << '\n';
    return 0;
  }
  std::cout << "Master:     " << master.master_url() << '\n'
            << "Version:    " << info.version() << '\n'
            << "Cluster ID: " << info.cluster_id() << '\n'
            << "Actor port: " << info.actor_port() << '\n';
  return 0;
}

} // namespace det::tools
