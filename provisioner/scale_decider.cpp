#include "provisioner/scale_decider.hpp"

#include <algorithm>
#include <cctype>

namespace det::provisioner {

std::string to_string(instance_state state) {
  switch (state) {
    case instance_state::starting: return "starting";
    case instance_state::running: return "running";
    case instance_state::stopping: return "stopping";
    case instance_state::stopped: return "stopped";
    case instance_state::terminating: return "terminating";
    case instance_state::unknown: break;
  }
  return "unknown";
}

instance_state instance_state_from(std::string_view word) {
  std::string w;
  for (char c : word) w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // EC2, GCE and Slurm words for each state; det's own names map to themselves.
  static const std::map<std::string, instance_state, std::less<>> words{
      {"starting", instance_state::starting},      {"pending", instance_state::starting},
      {"provisioning", instance_state::starting},  {"staging", instance_state::starting},
      {"configuring", instance_state::starting},   {"running", instance_state::running},
      {"stopping", instance_state::stopping},      {"suspending", instance_state::stopping},
      {"completing", instance_state::stopping},    {"stopped", instance_state::stopped},
      {"suspended", instance_state::stopped},      {"terminated", instance_state::stopped},
      {"completed", instance_state::stopped},      {"failed", instance_state::stopped},
      {"cancelled", instance_state::stopped},      {"timeout", instance_state::stopped},
      {"node_fail", instance_state::stopped},      {"preempted", instance_state::stopped},
      {"out_of_memory", instance_state::stopped},  {"terminating", instance_state::terminating},
      {"shutting-down", instance_state::terminating},
  };
  auto it = words.find(w);
  return it == words.end() ? instance_state::unknown : it->second;
}

int desired_new_instances(const std::vector<pending_task>& pending, const std::map<std::string, int>& max_slots_by_group,
                          int slots_per_instance, int max_aux_per_agent) {
  int zero_slot_tasks = 0;
  std::map<std::string, int> group_slots;
  for (const auto& task : pending) {
    if (task.slots == 0) {
      ++zero_slot_tasks;
    } else if (slots_per_instance == 0) {
      continue;
    } else if (task.slots <= slots_per_instance || task.slots % slots_per_instance == 0) {
      group_slots[task.group] += task.slots;
    }
    // else: a shape no number of instances holds (it spans instances only as whole ones)
  }
  int slot_sum = 0;
  for (const auto& [group, slots] : group_slots) {
    auto cap = max_slots_by_group.find(group);
    slot_sum += cap == max_slots_by_group.end() || cap->second <= 0 ? slots : std::min(cap->second, slots);
  }
  auto ceil_div = [](int a, int b) { return (a + b - 1) / b; };
  const int by_zero = zero_slot_tasks == 0 || max_aux_per_agent == 0 ? 0 : ceil_div(zero_slot_tasks, max_aux_per_agent);
  const int by_slot = slot_sum == 0 || slots_per_instance == 0 ? 0 : ceil_div(slot_sum, slots_per_instance);
  return std::max(by_zero, by_slot);
}

instance_classes classify(time_point now, const std::vector<instance>& listed, const std::map<std::string, bool>& agents,
                          const instance_classes& previous, const scale_limits& limits) {
  instance_classes out;
  for (const auto& inst : listed) {
    if (inst.state == instance_state::stopped) {
      out.stopped.insert(inst.id);
      continue;
    }
    if (inst.state != instance_state::starting && inst.state != instance_state::running)
      continue;  // stopping, terminating and unknown ones are on their way out or not ours to judge
    out.instances[inst.id] = inst;
    auto agent = agents.find(inst.id);
    if (agent != agents.end()) {
      if (!agent->second) continue;  // busy
      auto seen = previous.idle.find(inst.id);
      const auto since = seen == previous.idle.end() ? now : seen->second;
      out.idle[inst.id] = since;
      if (now > since + limits.max_idle_agent_period) out.long_idle.insert(inst.id);
    } else if (inst.launched + limits.max_agent_starting_period > now) {
      out.recently_launched.insert(inst.id);
    } else {
      auto seen = previous.disconnected.find(inst.id);
      const auto since = seen == previous.disconnected.end() ? now : seen->second;
      out.disconnected[inst.id] = since;
      if (now > since + limits.max_disconnect_period) out.long_disconnected.insert(inst.id);
    }
  }
  return out;
}

std::vector<termination> instances_to_terminate(const instance_classes& classes, const scale_limits& limits) {
  std::vector<termination> out;
  std::set<std::string> chosen;
  auto add = [&](const std::string& id, const std::string& reason) {
    if (chosen.insert(id).second) out.push_back({id, reason});
  };
  for (const auto& id : classes.stopped) add(id, "stopped");
  for (const auto& id : classes.long_disconnected) add(id, "long disconnected");
  // Stopped ones are not among `instances`: only running and starting ones count towards the limits.
  auto left = [&] {
    int n = 0;
    for (const auto& [id, inst] : classes.instances) n += chosen.count(id) ? 0 : 1;
    return n;
  };
  for (const auto& id : classes.long_idle)
    if (left() > limits.min_instances) add(id, "long idle");
  const std::string over = "instance number exceeds maximum";
  for (const auto& [id, since] : classes.idle)
    if (left() > limits.max_instances) add(id, over);
  for (const auto& [id, since] : classes.disconnected)
    if (left() > limits.max_instances) add(id, over);
  std::vector<const instance*> newest_first;
  for (const auto& [id, inst] : classes.instances) newest_first.push_back(&inst);
  std::stable_sort(newest_first.begin(), newest_first.end(),
                   [](const instance* a, const instance* b) { return a->launched > b->launched; });
  for (const auto* inst : newest_first)
    if (left() > limits.max_instances) add(inst->id, over);
  return out;
}

int instances_to_launch(const instance_classes& classes, int desired_new, const scale_limits& limits) {
  const int have = static_cast<int>(classes.instances.size());
  const int lo = limits.min_instances - have;
  const int hi = limits.max_instances - have;
  const int v = desired_new - static_cast<int>(classes.recently_launched.size());
  return std::max(0, std::min(std::max(lo, v), hi));
}

}  // namespace det::provisioner
