#include "scheduler/pool_scheduler.hpp"

#include "scheduler/policies.hpp"

#include <algorithm>
#include <sstream>

namespace det::scheduler {

std::map<std::string, int> running_slots_by_group(const pass_input& in) {
  std::map<std::string, int> held;
  for (const task_view* t : in.tasks)
    if (t->running) held[t->request.group] += t->request.slots;
  return held;
}

std::optional<placement> fit_task(const pass_input& in, const task_view& task, const std::vector<agent_view>& agents) {
  return find_fit(task.request.allocation_id, task.request.slots, agents, in.options.fitting,
                  in.options.max_zero_slot_tasks_per_agent, !task.request.one_agent);
}

bool within_max_slots(const pass_input& in, const task_view& task, int held) {
  int cap = in.group(task.request.group).max_slots;
  return cap <= 0 || held + task.request.slots <= cap;
}

agent_view* pool_scheduler::find_agent(const std::string& id) {
  auto it = std::find_if(agents_.begin(), agents_.end(), [&](const agent_view& a) { return a.id == id; });
  return it == agents_.end() ? nullptr : &*it;
}

void pool_scheduler::add_agent(const std::string& agent_id, const std::vector<int>& slot_ids) {
  remove_agent(agent_id);
  agent_view agent;
  agent.id = agent_id;
  for (int s : slot_ids) agent.slots.emplace(s, slot_view{});
  agents_.push_back(std::move(agent));
}

std::vector<std::string> pool_scheduler::remove_agent(const std::string& agent_id) {
  std::vector<std::string> lost;
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const auto& parts = it->second.parts;
    bool there = std::any_of(parts.begin(), parts.end(), [&](const agent_part& p) { return p.agent_id == agent_id; });
    if (it->second.running && there && parts.size() > 1) {
      // Its workers elsewhere still run until its allocation stops them and releases it: they
      // keep their slots meanwhile.
      auto& kept = it->second.parts;
      kept.erase(std::remove_if(kept.begin(), kept.end(), [&](const agent_part& p) { return p.agent_id == agent_id; }),
                 kept.end());
      ++it;
    } else if (it->second.running && there) {
      lost.push_back(it->first);
      vacate(it->second);
      it = tasks_.erase(it);
    } else {
      ++it;
    }
  }
  agents_.erase(std::remove_if(agents_.begin(), agents_.end(), [&](const agent_view& a) { return a.id == agent_id; }),
                agents_.end());
  return lost;
}

bool pool_scheduler::set_agent_enabled(const std::string& agent_id, bool enabled) {
  agent_view* agent = find_agent(agent_id);
  if (!agent) return false;
  agent->enabled = enabled;
  return true;
}

bool pool_scheduler::set_slot_enabled(const std::string& agent_id, int slot_id, bool enabled) {
  agent_view* agent = find_agent(agent_id);
  if (!agent) return false;
  auto slot = agent->slots.find(slot_id);
  if (slot == agent->slots.end()) return false;
  slot->second.enabled = enabled;
  return true;
}

std::vector<std::string> pool_scheduler::tasks_on(const std::string& agent_id, std::optional<int> slot_id) const {
  std::vector<std::string> ids;
  for (const auto& [id, task] : tasks_) {
    if (!task.running) continue;
    for (const auto& part : task.parts) {
      if (part.agent_id != agent_id) continue;
      if (!slot_id || std::count(part.slot_ids.begin(), part.slot_ids.end(), *slot_id)) {
        ids.push_back(id);
        break;
      }
    }
  }
  return ids;
}

void pool_scheduler::set_group(const std::string& group, const group_settings& settings) { groups_[group] = settings; }

void pool_scheduler::forget_group(const std::string& group) {
  bool used = std::any_of(tasks_.begin(), tasks_.end(), [&](const auto& t) { return t.second.request.group == group; });
  if (!used) {
    groups_.erase(group);
    group_order_.erase(group);
  }
}

const group_settings& pool_scheduler::group(const std::string& group) const {
  static const group_settings defaults;
  auto it = groups_.find(group);
  return it == groups_.end() ? defaults : it->second;
}

void pool_scheduler::request(const task_request& task) {
  if (tasks_.count(task.allocation_id)) return;
  task_view view;
  view.request = task;
  view.request.slots = std::max(task.slots, 0);
  view.order = next_order_++;
  group_order_.emplace(task.group, view.order);
  tasks_.emplace(task.allocation_id, std::move(view));
}

bool pool_scheduler::adopt(const task_request& task, const placement& where) {
  if (tasks_.count(task.allocation_id)) return false;
  for (const auto& part : where.parts) {
    agent_view* agent = find_agent(part.agent_id);
    if (!agent) return false;
    for (int id : part.slot_ids) {
      auto slot = agent->slots.find(id);
      if (slot == agent->slots.end() || !slot->second.owner.empty()) return false;
    }
  }
  request(task);
  occupy(tasks_.at(task.allocation_id), where);
  return true;
}

void pool_scheduler::release(const std::string& allocation_id) {
  auto it = tasks_.find(allocation_id);
  if (it == tasks_.end()) return;
  vacate(it->second);
  tasks_.erase(it);
}

void pool_scheduler::occupy(task_view& task, const placement& where) {
  take(agents_, where);
  task.parts = where.parts;
  task.running = true;
}

void pool_scheduler::vacate(const task_view& task) {
  if (task.running) give_back(agents_, task.request.allocation_id, task.parts);
}

bool pool_scheduler::could_ever_fit(int slots, bool one_agent) const {
  return fits_when_idle(slots, agents_, options_.fitting, options_.max_zero_slot_tasks_per_agent, true, !one_agent);
}

decision pool_scheduler::schedule() {
  decision out;
  // Tasks with slots and 0-slot tasks compete for different things, so each kind has its own pass.
  for (bool zero_slot : {false, true}) {
    pass_input in{{}, agents_, [this](const std::string& g) -> const group_settings& { return group(g); }, options_,
                  [this](const std::string& g) {
                    auto it = group_order_.find(g);
                    return it == group_order_.end() ? int64_t{0} : it->second;
                  }};
    for (const auto& [id, task] : tasks_)
      if ((task.request.slots == 0) == zero_slot) in.tasks.push_back(&task);
    if (in.tasks.empty()) continue;
    std::sort(in.tasks.begin(), in.tasks.end(), [](const task_view* a, const task_view* b) { return a->order < b->order; });
    pass_result result = options_.policy == policy_kind::fair_share    ? fair_share_pass(in)
                         : options_.policy == policy_kind::round_robin ? round_robin_pass(in)
                                                                        : priority_pass(in);
    for (auto& where : result.start) {
      auto& task = tasks_.at(where.allocation_id);
      occupy(task, where);
      task.backfilled = std::count(result.backfilled.begin(), result.backfilled.end(), where.allocation_id) > 0;
      out.start.push_back(std::move(where));
    }
    for (const auto& id : result.preempt) {
      auto& task = tasks_.at(id);
      if (task.preempting) continue;
      task.preempting = true;
      out.preempt.push_back(id);
    }
  }
  return out;
}

std::size_t pool_scheduler::queued() const {
  return std::count_if(tasks_.begin(), tasks_.end(), [](const auto& t) { return !t.second.running; });
}

std::size_t pool_scheduler::running() const { return tasks_.size() - queued(); }

int pool_scheduler::total_slots() const {
  int n = 0;
  for (const auto& a : agents_) n += a.usable_slots();
  return n;
}

int pool_scheduler::free_slots() const {
  int n = 0;
  for (const auto& a : agents_) n += a.free_slots();
  return n;
}

std::string pool_scheduler::describe() const {
  static const char* policies[] = {"priority", "fair_share", "round_robin"};
  std::ostringstream os;
  os << "scheduler: " << policies[static_cast<int>(options_.policy)]
     << (options_.policy == policy_kind::priority ? options_.preemption ? " with preemption" : " without preemption" : "")
     << ", " << (options_.fitting == fitting_policy::best ? "best" : "worst") << " fit\n"
     << "slots: " << free_slots() << " free of " << total_slots() << "\n";
  for (const auto& a : agents_) {
    os << "agent " << a.id << (a.enabled ? "" : " (disabled)") << ":";
    for (const auto& [id, slot] : a.slots)
      os << " " << id << "=" << (!slot.enabled ? "disabled" : slot.owner.empty() ? "free" : slot.owner);
    if (a.zero_slot_tasks > 0) os << " +" << a.zero_slot_tasks << " zero-slot";
    os << "\n";
  }
  std::vector<const task_view*> queue;
  for (const auto& [id, task] : tasks_)
    if (!task.running) queue.push_back(&task);
  std::sort(queue.begin(), queue.end(), [](const task_view* a, const task_view* b) { return a->order < b->order; });
  os << "queue (" << queue.size() << "):";
  for (const task_view* t : queue)
    os << " " << t->request.allocation_id << "[" << t->request.slots << " slots, priority "
       << group(t->request.group).priority << "]";
  os << "\n";
  return os.str();
}

}  // namespace det::scheduler
