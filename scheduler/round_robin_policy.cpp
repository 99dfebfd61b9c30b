// Round robin (Determined's before 0.34, reference §3.4), one pass: jobs with the fewest active
// slots first (then the oldest) each start one pending task per round, until nothing more fits.

#include "scheduler/policies.hpp"

#include <algorithm>

namespace det::scheduler {

pass_result round_robin_pass(pass_input& in) {
  struct job {
    std::string group;
    int64_t first_order;
    std::vector<const task_view*> pending;
  };
  std::vector<job> jobs;
  std::map<std::string, size_t> index;
  auto held = running_slots_by_group(in);
  for (const task_view* t : in.tasks) {
    auto [it, added] = index.emplace(t->request.group, jobs.size());
    if (added) jobs.push_back({t->request.group, in.group_order(t->request.group), {}});
    if (!t->running) jobs[it->second].pending.push_back(t);
  }
  std::stable_sort(jobs.begin(), jobs.end(), [&](const job& a, const job& b) {
    int ha = held[a.group], hb = held[b.group];
    return ha != hb ? ha < hb : a.first_order < b.first_order;
  });

  pass_result out;
  for (bool progress = true; progress;) {
    progress = false;
    for (auto& j : jobs) {
      for (auto it = j.pending.begin(); it != j.pending.end(); ++it) {
        const task_view& task = **it;
        if (!within_max_slots(in, task, held[j.group])) continue;
        auto fit = fit_task(in, task, in.agents);
        if (!fit) continue;
        take(in.agents, *fit);
        held[j.group] += task.request.slots;
        out.start.push_back(std::move(*fit));
        j.pending.erase(it);
        progress = true;
        break;  // one task per job per round
      }
    }
  }
  return out;
}

}  // namespace det::scheduler
