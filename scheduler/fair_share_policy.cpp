// Determined's fair-share scheduler (fair_share.go, reference §3.3), one pass: weighted max-min
// fairness by progressive filling over jobs, then each job starts pending tasks up to its offer
// or releases preemptible tasks down to it.

#include "scheduler/policies.hpp"

#include <algorithm>
#include <limits>

namespace det::scheduler {
namespace {

struct job_state {
  std::string group;
  double weight = 1;
  int64_t first_order = 0;  // the job's first task: older jobs come first among equals
  int demand = 0;           // slots all its tasks want, capped by max_slots
  int active = 0;           // slots its running tasks hold
  int presubscribed = 0;    // of those, held by tasks that cannot be preempted
  int offered = 0;
  bool disabled = false;
  std::vector<const task_view*> running;  // arrival order
  std::vector<const task_view*> pending;  // arrival order
};

std::vector<job_state> job_states(const pass_input& in) {
  std::vector<job_state> jobs;
  std::map<std::string, size_t> index;
  for (const task_view* t : in.tasks) {
    auto [it, added] = index.emplace(t->request.group, jobs.size());
    if (added) {
      job_state job;
      job.group = t->request.group;
      job.weight = std::max(in.group(job.group).weight, 0.0);
      job.first_order = in.group_order(t->request.group);
      jobs.push_back(std::move(job));
    }
    job_state& job = jobs[it->second];
    job.demand += t->request.slots;
    if (t->running) {
      job.active += t->request.slots;
      if (!t->request.preemptible) job.presubscribed += t->request.slots;
      job.running.push_back(t);
    } else {
      job.pending.push_back(t);
    }
  }
  for (auto& job : jobs) {
    int cap = in.group(job.group).max_slots;
    if (cap > 0) job.demand = std::min(job.demand, std::max(cap, job.presubscribed));
  }
  return jobs;
}

// Progressive filling: each round offers every unsatisfied job its weighted share of what was left
// at the round's start (at least one slot), until capacity or demand runs out.
void offer_slots(std::vector<job_state>& jobs, int capacity) {
  for (auto& job : jobs) {
    job.offered = job.presubscribed;  // slots that cannot be taken back are theirs already
    capacity -= job.presubscribed;
  }
  while (capacity > 0) {
    double total_weight = 0;
    for (const auto& job : jobs)
      if (!job.disabled && job.offered < job.demand) total_weight += job.weight;
    if (total_weight <= 0) return;
    const int start = capacity;
    bool progress = false;
    for (auto& job : jobs) {
      if (job.disabled || job.offered >= job.demand) continue;
      int share = std::max(1, static_cast<int>(start * job.weight / total_weight));
      int offer = std::min({share, capacity, job.demand - job.offered});
      job.offered += offer;
      capacity -= offer;
      progress = progress || offer > 0;
      if (capacity == 0) return;
    }
    if (!progress) return;
  }
}

int smallest_pending(const job_state& job) {
  int smallest = std::numeric_limits<int>::max();
  for (const task_view* t : job.pending) smallest = std::min(smallest, t->request.slots);
  return smallest;
}

}  // namespace

pass_result fair_share_pass(pass_input& in) {
  // Offers go round the jobs oldest first. (Ordering them by the slots they hold, as Determined
  // does, moves the rounding remainders from pass to pass, and with them preempts and restarts
  // tasks for nothing.)
  auto jobs = job_states(in);
  // Slots that take new tasks, plus those held on disabled agents and slots: their tasks count as
  // their jobs' active slots, and leaving them out would preempt healthy tasks elsewhere.
  int capacity = 0;
  const bool zero_slot = in.tasks.front()->request.slots == 0;
  for (const auto& agent : in.agents) {
    if (zero_slot) {
      capacity += agent.enabled ? in.options.max_zero_slot_tasks_per_agent : agent.zero_slot_tasks;
      continue;
    }
    for (const auto& [id, slot] : agent.slots)
      capacity += (agent.enabled && slot.enabled) || !slot.owner.empty() ? 1 : 0;
  }
  // A job that runs nothing and is offered less than its smallest task needs would hold its offer
  // unused; the newest such job is left out and the offers are made again. (A job that runs
  // tasks keeps a leftover too small for its next one: taking its offer away would preempt them.)
  for (;;) {
    offer_slots(jobs, capacity);
    job_state* stuck = nullptr;
    for (auto& job : jobs)
      if (!job.disabled && !job.pending.empty() && job.active == 0 && job.offered > 0 &&
          job.offered < smallest_pending(job) && (!stuck || job.first_order > stuck->first_order))
        stuck = &job;
    if (!stuck) break;
    stuck->disabled = true;
    stuck->offered = 0;
  }

  pass_result out;
  for (auto& job : jobs) {
    if (job.active > job.offered) {
      // Over its share: release preemptible tasks, newest first.
      for (auto it = job.running.rbegin(); it != job.running.rend() && job.active > job.offered; ++it) {
        if (!(*it)->request.preemptible) continue;
        out.preempt.push_back((*it)->request.allocation_id);
        job.active -= (*it)->request.slots;
      }
      continue;
    }
    for (const task_view* task : job.pending) {
      if (job.offered - job.active < task->request.slots) continue;
      auto fit = fit_task(in, *task, in.agents);
      if (!fit) continue;
      take(in.agents, *fit);
      job.active += task->request.slots;
      out.start.push_back(std::move(*fit));
    }
  }
  return out;
}

}  // namespace det::scheduler
