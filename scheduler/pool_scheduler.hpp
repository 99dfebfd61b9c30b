#pragma once
// A resource pool's scheduling, as Determined's agent resource manager does it (reference §3): the
// pool's agents and slots, the tasks that want slots or hold them, and a policy that decides which
// tasks start and which are preempted to make room. Plain logic, owned by the resource pool actor.
//
// Policies: `priority` (1-99, lower first; with `preemption`, lower-priority preemptible tasks are
// released for higher ones, and preemptible tasks may backfill behind a blocked level),
// `fair_share` (weighted max-min by progressive filling over jobs) and `round_robin` (rounds of
// one task per job, jobs with fewer active slots first, until nothing more fits). Every policy
// honours a job's max_slots.
// Tasks are gangs: all their slots at once, on one agent or across whole idle agents. 0-slot tasks
// are scheduled apart, limited per agent.

#include "scheduler/fitting.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace det::scheduler {

enum class policy_kind { priority, fair_share, round_robin };

struct scheduler_options {
  policy_kind policy = policy_kind::priority;
  fitting_policy fitting = fitting_policy::best;
  bool preemption = false;
  int max_zero_slot_tasks_per_agent = 100;
};

/// A task's demand: one allocation of `slots` slots for a job (`group`: an experiment).
struct task_request {
  std::string allocation_id;
  std::string group;
  int slots = 1;
  bool preemptible = true;
  bool one_agent = false;  // never spans agents (a Core API trial: one process)
};

/// A job's settings; every task of the job shares them.
struct group_settings {
  int priority = 42;  // 1-99, lower runs first
  double weight = 1;  // fair share
  int max_slots = 0;  // the most slots its tasks may hold at once; 0: no cap
};

/// What one scheduling pass decided.
struct decision {
  std::vector<placement> start;
  /// Running tasks to stop gracefully (checkpoint and exit) so that others fit; each is named once.
  std::vector<std::string> preempt;
  bool empty() const { return start.empty() && preempt.empty(); }
};

/// A task as the pool sees it.
struct task_view {
  task_request request;
  int64_t order = 0;  // arrival: earlier tasks come first among equals
  bool running = false;
  bool preempting = false;  // told to stop; its slots are still held
  bool backfilled = false;  // started behind a blocked higher priority
  std::vector<agent_part> parts;
};

class pool_scheduler {
 public:
  explicit pool_scheduler(scheduler_options options = {}) : options_(options) {}


  /// Adds an agent whose `slot_ids` are all free; re-adding a known agent replaces it.
  void add_agent(const std::string& agent_id, const std::vector<int>& slot_ids);
  /// Forgets the agent; returns the running tasks that held slots there (they are lost and
  /// forgotten). A task that also holds slots on other agents keeps those until released.
  std::vector<std::string> remove_agent(const std::string& agent_id);
  /// A disabled agent (or slot) gets no new tasks; returns false for an unknown agent or slot.
  bool set_agent_enabled(const std::string& agent_id, bool enabled);
  bool set_slot_enabled(const std::string& agent_id, int slot_id, bool enabled);
  /// The running tasks that hold slots on the agent (or on one slot of it).
  std::vector<std::string> tasks_on(const std::string& agent_id, std::optional<int> slot_id = std::nullopt) const;

  /// Sets (or changes) a job's priority, weight and max_slots.
  void set_group(const std::string& group, const group_settings& settings);
  /// Forgets a job's settings once none of its tasks is left.
  void forget_group(const std::string& group);
  const group_settings& group(const std::string& group) const;

  /// Queues a task; a known allocation id is ignored.
  void request(const task_request& task);
  /// Records a task that already runs where `where` says (a worker a restarted master takes back):
  /// it holds those slots from now on. False, and nothing recorded, if they are not free.
  bool adopt(const task_request& task, const placement& where);
  /// Drops a queued task or frees the slots of a running one.
  void release(const std::string& allocation_id);

  /// Whether a task of `slots` slots would fit if every agent and slot were enabled and free: one
  /// that never can is refused rather than queued for ever.
  bool could_ever_fit(int slots, bool one_agent) const;

  /// One pass of the policy over the queued and running tasks. Started tasks hold their slots
  /// from now on; preempted ones keep theirs until released.
  decision schedule();

  const std::vector<agent_view>& agents() const { return agents_; }
  const std::map<std::string, task_view>& tasks() const { return tasks_; }
  std::size_t queued() const;
  std::size_t running() const;
  int total_slots() const;
  int free_slots() const;
  /// A few lines on the policy, agents, slots and queue (admin REPL).
  std::string describe() const;

 private:
  agent_view* find_agent(const std::string& id);
  void occupy(task_view& task, const placement& where);
  void vacate(const task_view& task);
  int group_slots(const std::string& group) const;

  scheduler_options options_;
  std::vector<agent_view> agents_;  // registration order
  std::map<std::string, task_view> tasks_;
  std::map<std::string, group_settings> groups_;
  std::map<std::string, int64_t> group_order_;  // each job's first request, for a stable job order
  int64_t next_order_ = 0;
};

}  // namespace det::scheduler
