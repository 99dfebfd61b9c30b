#pragma once
// The scheduling policies, each one pass over one kind of task (those with slots, or the 0-slot
// ones) on a copy of the agents. Internal to pool_scheduler.

#include "scheduler/pool_scheduler.hpp"

#include <functional>
#include <vector>

namespace det::scheduler {

struct pass_input {
  std::vector<const task_view*> tasks;  // one kind, in arrival order
  std::vector<agent_view> agents;       // the running tasks' slots held
  std::function<const group_settings&(const std::string&)> group;
  const scheduler_options& options;
  std::function<int64_t(const std::string&)> group_order;  // when the job first asked: stable
};

struct pass_result {
  std::vector<placement> start;
  std::vector<std::string> backfilled;  // of `start`: those that started behind a blocked priority
  std::vector<std::string> preempt;     // running tasks to release, already preempting ones included
};

pass_result priority_pass(pass_input& in);
pass_result fair_share_pass(pass_input& in);
pass_result round_robin_pass(pass_input& in);

/// Where `task` fits on `agents` under the pool's options.
std::optional<placement> fit_task(const pass_input& in, const task_view& task, const std::vector<agent_view>& agents);

/// Slots held by each job's running tasks.
std::map<std::string, int> running_slots_by_group(const pass_input& in);

/// Whether starting `task` keeps its job within max_slots, given the job's `held` slots.
bool within_max_slots(const pass_input& in, const task_view& task, int held);

}  // namespace det::scheduler
