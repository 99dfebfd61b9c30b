#pragma once
// det's identifiers, typed, as Determined's model package has them (model.AllocationID,
// model.JobID): a value says what it names, and the two that travel as text (a pool's job, a
// run's allocation) are formatted and parsed here and nowhere else.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "caf/meta/type_name.hpp"

namespace det {

/// Tags that keep numeric ids apart in message signatures.
struct experiment_id {
  int64_t value = 0;
};
struct trial_id {
  int64_t value = 0;
};
struct user_id {
  int64_t value = 0;
};
struct workspace_id {
  int64_t value = 0;
};
struct project_id {
  int64_t value = 0;
};
struct token_id {
  int64_t value = 0;
};

/// A command's, notebook's, shell's or TensorBoard's id, a UUID the master chose.
struct task_id {
  std::string value;
};

/// What a pool schedules and queues: the trials of one experiment, or one task. As text (a pool's
/// job group, the jobs REST lists) an experiment's job is its id, "12", and a task's is
/// "task <task id>".
class job_id {
public:
  static job_id of(experiment_id experiment) { return job_id{experiment, {}}; }
  static job_id of(task_id task) { return job_id{{}, std::move(task)}; }
  /// The job `text` names, as str() writes it; nullopt for anything else.
  static std::optional<job_id> parse(std::string_view text);

  bool is_task() const { return experiment_.value == 0; }
  experiment_id experiment() const { return experiment_; }  ///< 0 for a task's job
  const task_id& task() const { return task_; }             ///< empty for an experiment's job
  std::string str() const;

  friend bool operator==(const job_id& a, const job_id& b) {
    return a.experiment_.value == b.experiment_.value && a.task_.value == b.task_.value;
  }

private:
  job_id(experiment_id experiment, task_id task) : experiment_{experiment}, task_{std::move(task)} {}
  experiment_id experiment_;
  task_id task_;
};

/// The slots a pool gives one run of a trial, or one task. As text (agents' containers, Prometheus'
/// labels, the REPL) run R of trial T is "T.R" and a task's allocation is the task's id.
class allocation_id {
public:
  static allocation_id of(trial_id trial, int64_t run) { return allocation_id{trial, run, {}}; }
  static allocation_id of(task_id task) { return allocation_id{{}, 0, std::move(task)}; }
  /// The allocation `text` names, as str() writes it; nullopt for anything else.
  static std::optional<allocation_id> parse(std::string_view text);

  bool is_task() const { return trial_.value == 0; }
  trial_id trial() const { return trial_; }     ///< 0 for a task's allocation
  int64_t run() const { return run_; }          ///< the trial's run (its first is 1)
  const task_id& task() const { return task_; } ///< empty for a trial's allocation
  std::string str() const;

  friend bool operator==(const allocation_id& a, const allocation_id& b) {
    return a.trial_.value == b.trial_.value && a.run_ == b.run_ && a.task_.value == b.task_.value;
  }

private:
  allocation_id(trial_id trial, int64_t run, task_id task) : trial_{trial}, run_{run}, task_{std::move(task)} {}
  trial_id trial_;
  int64_t run_ = 0;
  task_id task_;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, experiment_id& x) {
  return f(caf::meta::type_name("experiment_id"), x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trial_id& x) {
  return f(caf::meta::type_name("trial_id"), x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, user_id& x) {
  return f(caf::meta::type_name("user_id"), x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, workspace_id& x) {
  return f(caf::meta::type_name("workspace_id"), x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, project_id& x) {
  return f(caf::meta::type_name("project_id"), x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_id& x) {
  return f(caf::meta::type_name("token_id"), x.value);
}

} // namespace det
