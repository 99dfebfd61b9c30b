// Determined's priority scheduler (priority.go, reference §3.2), one pass.

#include "scheduler/policies.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace det::scheduler {
namespace {

struct by_priority_then_order {
  const pass_input& in;
  bool operator()(const task_view* a, const task_view* b) const {
    int pa = in.group(a->request.group).priority, pb = in.group(b->request.group).priority;
    return pa != pb ? pa < pb : a->order < b->order;
  }
};

// Releases running preemptible tasks, lowest priority and newest first, down to `task`'s own
// priority (there, only tasks behind it in the queue) until `task` fits. Returns what to release,
// or nothing if even that would not make it fit; on success `agents` holds the new state.
std::vector<const task_view*> preempt_for(const pass_input& in, const task_view& task, int priority,
                                          const std::vector<const task_view*>& running,
                                          const std::set<std::string>& releasing, std::vector<agent_view>& agents) {
  std::optional<std::vector<agent_view>> local;  // copied once a candidate turns up: most calls find none
  std::vector<const task_view*> released;
  // `running` is sorted by priority then order: walking it backwards visits the lowest priority
  // first and, within a priority, the newest first.
  for (auto it = running.rbegin(); it != running.rend(); ++it) {
    const task_view& candidate = **it;
    int candidate_priority = in.group(candidate.request.group).priority;
    if (candidate_priority < priority) break;
    if (!candidate.request.preemptible || releasing.count(candidate.request.allocation_id)) continue;
    if (candidate_priority == priority && candidate.order < task.order) continue;
    if (!local) local = agents;
    give_back(*local, candidate.request.allocation_id, candidate.parts);
    released.push_back(&candidate);
    if (auto fit = fit_task(in, task, *local)) {
      // Only the victims whose slots the task takes are preempted; the others keep running.
      std::vector<const task_view*> needed;
      for (const task_view* victim : released) {
        bool overlaps = false;
        for (const auto& vp : victim->parts)
          for (const auto& fp : fit->parts)
            if (vp.agent_id == fp.agent_id &&
                (vp.slot_ids.empty() || std::any_of(vp.slot_ids.begin(), vp.slot_ids.end(), [&](int s) {
                   return std::count(fp.slot_ids.begin(), fp.slot_ids.end(), s) > 0;
                 })))
              overlaps = true;
        if (overlaps)
          needed.push_back(victim);
        else
          take(*local, {victim->request.allocation_id, victim->parts});
      }
      take(*local, *fit);
      agents = std::move(*local);
      return needed;
    }
  }
  return {};
}

// Depends only on the slot count and one_agent, so a pass asks once per pair (`known`).
bool could_ever_fit(const pass_input& in, const task_view& task, std::map<std::pair<int, bool>, bool>& known) {
  const std::pair<int, bool> key{task.request.slots, task.request.one_agent};
  auto cached = known.find(key);
  if (cached != known.end()) return cached->second;
  return known[key] = fits_when_idle(task.request.slots, in.agents, in.options.fitting,
                                     in.options.max_zero_slot_tasks_per_agent, false, !task.request.one_agent);
}

}  // namespace

pass_result priority_pass(pass_input& in) {
  std::vector<const task_view*> pending, running;
  for (const task_view* t : in.tasks) (t->running ? running : pending).push_back(t);
  by_priority_then_order order{in};
  std::stable_sort(pending.begin(), pending.end(), order);
  std::stable_sort(running.begin(), running.end(), order);
  auto held = running_slots_by_group(in);

  pass_result out;
  std::set<std::string> releasing;
  std::map<std::pair<int, bool>, bool> fits_when_empty;  // by slot count and one_agent
  bool backfilling = false;
  for (size_t level_begin = 0; level_begin < pending.size();) {
    int priority = in.group(pending[level_begin]->request.group).priority;
    size_t level_end = level_begin;
    while (level_end < pending.size() && in.group(pending[level_end]->request.group).priority == priority) ++level_end;

    std::vector<std::pair<const task_view*, placement>> fitted;
    std::vector<const task_view*> unfitted;
    for (size_t i = level_begin; i < level_end; ++i) {
      const task_view& task = *pending[i];
      if (!within_max_slots(in, task, held[task.request.group])) continue;  // waits for its own job's slots
      auto fit = fit_task(in, task, in.agents);
      if (!fit) {
        unfitted.push_back(&task);
        continue;
      }
      take(in.agents, *fit);
      held[task.request.group] += task.request.slots;
      fitted.emplace_back(&task, std::move(*fit));
    }
    // Nothing starts while a preemption is pending; behind a blocked level only preemptible tasks
    // may start, and only where preemption can take their slots back.
    if (releasing.empty()) {
      for (auto& [task, where] : fitted) {
        if (!backfilling) {
          out.start.push_back(std::move(where));
        } else if (in.options.preemption && task->request.preemptible) {
          out.backfilled.push_back(task->request.allocation_id);
          out.start.push_back(std::move(where));
        }
      }
    }
    // A task that would not fit even on the pool emptied (more slots than its enabled agents
    // have) waits for the pool to change, not for tasks to end: it holds no level back.
    if (std::any_of(unfitted.begin(), unfitted.end(),
                    [&](const task_view* t) { return could_ever_fit(in, *t, fits_when_empty); }))
      backfilling = true;
    if (in.options.preemption) {
      for (const task_view* task : unfitted) {
        // It will fit once the preemptions already chosen finish.
        if (auto fit = fit_task(in, *task, in.agents)) {
          take(in.agents, *fit);
          continue;
        }
        for (const task_view* victim : preempt_for(in, *task, priority, running, releasing, in.agents))
          releasing.insert(victim->request.allocation_id);
      }
    }
    level_begin = level_end;
  }
  out.preempt.assign(releasing.begin(), releasing.end());
  return out;
}

}  // namespace det::scheduler
