#include "scheduler/fitting.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>

namespace det::scheduler {

int agent_view::free_slots() const {
  if (!enabled) return 0;
  int n = 0;
  for (const auto& [id, slot] : slots) n += slot.enabled && slot.owner.empty() ? 1 : 0;
  return n;
}

int agent_view::usable_slots() const {
  int n = 0;
  for (const auto& [id, slot] : slots) n += slot.enabled ? 1 : 0;
  return n;
}

bool agent_view::idle() const {
  return std::all_of(slots.begin(), slots.end(), [](const auto& s) { return s.second.owner.empty(); });
}

namespace {

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// Equal scores go to the agent whose hash is nearest the task's, so that equal agents share
// tasks evenly without a shared counter.
uint64_t hash_distance(const std::string& task, const std::string& agent) {
  uint64_t a = fnv1a(task), b = fnv1a(agent);
  return a > b ? a - b : b - a;
}

double score(fitting_policy policy, int empty, int total) {
  if (policy == fitting_policy::best) return 1.0 / (1.0 + empty);
  return total > 0 ? static_cast<double>(empty) / total : 0;
}

std::optional<placement> single_agent_fit(const std::string& allocation_id, int slots,
                                          const std::vector<agent_view>& agents, fitting_policy policy,
                                          int max_zero_slot_tasks) {
  const agent_view* best = nullptr;
  std::tuple<double, uint64_t> best_key{};
  for (const auto& agent : agents) {
    if (!agent.enabled) continue;
    int empty = 0, total = 0;
    if (slots == 0) {
      empty = max_zero_slot_tasks - agent.zero_slot_tasks;
      total = max_zero_slot_tasks;
      if (empty <= 0) continue;
    } else {
      empty = agent.free_slots();
      total = agent.usable_slots();
      if (empty < slots) continue;
    }
    // Higher score first, then the smaller hash distance, then the smaller id.
    std::tuple<double, uint64_t> key{-score(policy, empty, total), hash_distance(allocation_id, agent.id)};
    if (!best || key < best_key || (key == best_key && agent.id < best->id)) {
      best = &agent;
      best_key = key;
    }
  }
  if (!best) return std::nullopt;
  agent_part part{best->id, {}};
  for (const auto& [id, slot] : best->slots) {
    if (static_cast<int>(part.slot_ids.size()) == slots) break;
    if (slot.enabled && slot.owner.empty()) part.slot_ids.push_back(id);
  }
  return placement{allocation_id, {std::move(part)}};
}

// Whole idle agents of one size, largest size first, when `slots` is a multiple of it.
std::optional<placement> multi_agent_fit(const std::string& allocation_id, int slots,
                                         const std::vector<agent_view>& agents) {
  std::map<int, std::vector<const agent_view*>, std::greater<>> by_size;
  for (const auto& agent : agents)
    if (agent.enabled && agent.idle() && agent.free_slots() > 0 && agent.free_slots() == agent.usable_slots())
      by_size[agent.free_slots()].push_back(&agent);
  for (const auto& [size, group] : by_size) {
    if (slots % size != 0 || static_cast<int>(group.size()) < slots / size) continue;
    placement where{allocation_id, {}};
    for (int i = 0; i < slots / size; ++i) {
      agent_part part{group[i]->id, {}};
      for (const auto& [id, slot] : group[i]->slots)
        if (slot.enabled) part.slot_ids.push_back(id);
      where.parts.push_back(std::move(part));
    }
    return where;
  }
  return std::nullopt;
}

agent_view* find(std::vector<agent_view>& agents, const std::string& id) {
  auto it = std::find_if(agents.begin(), agents.end(), [&](const agent_view& a) { return a.id == id; });
  return it == agents.end() ? nullptr : &*it;
}

}  // namespace

std::optional<placement> find_fit(const std::string& allocation_id, int slots, const std::vector<agent_view>& agents,
                                  fitting_policy policy, int max_zero_slot_tasks, bool across_agents) {
  if (auto one = single_agent_fit(allocation_id, slots, agents, policy, max_zero_slot_tasks)) return one;
  if (slots > 1 && across_agents) return multi_agent_fit(allocation_id, slots, agents);
  return std::nullopt;
}

bool fits_when_idle(int slots, std::vector<agent_view> agents, fitting_policy policy, int max_zero_slot_tasks,
                    bool enable_all, bool across_agents) {
  for (auto& agent : agents) {
    agent.zero_slot_tasks = 0;
    agent.enabled = agent.enabled || enable_all;
    for (auto& [id, slot] : agent.slots) slot = slot_view{slot.enabled || enable_all, ""};
  }
  return find_fit("", slots, agents, policy, max_zero_slot_tasks, across_agents).has_value();
}

void take(std::vector<agent_view>& agents, const placement& where) {
  for (const auto& part : where.parts) {
    agent_view* agent = find(agents, part.agent_id);
    if (!agent) continue;
    if (part.slot_ids.empty()) ++agent->zero_slot_tasks;
    for (int id : part.slot_ids) agent->slots[id].owner = where.allocation_id;
  }
}

void give_back(std::vector<agent_view>& agents, const std::string& allocation_id, const std::vector<agent_part>& parts) {
  for (const auto& part : parts) {
    agent_view* agent = find(agents, part.agent_id);
    if (!agent) continue;
    if (part.slot_ids.empty()) agent->zero_slot_tasks = std::max(0, agent->zero_slot_tasks - 1);
    for (int id : part.slot_ids) {
      auto slot = agent->slots.find(id);
      if (slot != agent->slots.end() && slot->second.owner == allocation_id) slot->second.owner.clear();
    }
  }
}

}  // namespace det::scheduler
