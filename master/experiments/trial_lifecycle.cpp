#include "master/experiments/trial_lifecycle.hpp"

#include "master/scheduling/container_exit.hpp"

namespace det {
namespace {

// How much a report says about a run; merge keeps the one that says most.
int weight(pb::WorkerOutcome x) {
  switch (x) {
    case pb::WORKER_OUTCOME_USER_CANCELED: return 5;
    case pb::WORKER_OUTCOME_INVALID_ENVIRONMENT: return 4;
    case pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS: return 4;
    case pb::WORKER_OUTCOME_ERRORED: return 3;
    case pb::WORKER_OUTCOME_STOPPED: return 2;
    case pb::WORKER_OUTCOME_COMPLETED: return 1;
    default: return 0;
  }
}

bool reported(const trial_facts& f, pb::WorkerOutcome x) {
  return f.report && f.report->outcome == x;
}

bool failed(const trial_facts& f) {
  return reported(f, pb::WORKER_OUTCOME_ERRORED) || reported(f, pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS) ||
         reported(f, pb::WORKER_OUTCOME_INVALID_ENVIRONMENT);
}

trial_decision ended(pb::State state, std::string reason = {}, std::vector<std::string> notes = {}) {
  trial_decision d;
  d.step = trial_step::end;
  d.end_state = state;
  d.reason = std::move(reason);
  d.notes = std::move(notes);
  return d;
}

trial_decision step(trial_step s, std::vector<std::string> notes = {}) {
  trial_decision d;
  d.step = s;
  d.notes = std::move(notes);
  return d;
}

// Another run, or PAUSED if its experiment is paused now: what follows a run that stopped
// before its length through no fault of its own.
trial_decision run_again_unless_paused(const trial_facts& f, std::vector<std::string> notes) {
  return step(f.experiment_paused ? trial_step::pause : trial_step::requeue, std::move(notes));
}

// A run stopped gracefully for a pause or a preemption, which has not finished the trial.
trial_decision after_graceful_stop(const trial_facts& f) {
  if (f.intent == stop_intent::pause)
    return run_again_unless_paused(f, {"trial paused"});
  if (f.experiment_paused)
    return step(trial_step::pause, {"preempted, and its experiment is paused"});
  return step(trial_step::requeue, {"preempted: back in the queue" +
                                    (f.latest_checkpoint.empty()
                                         ? std::string{}
                                         : ", to continue from checkpoint " + f.latest_checkpoint)});
}

// A clean run under a promotion-based search: at its length it waits for the searcher.
trial_decision at_length(const trial_facts& f) {
  if (f.length > f.run_length)  // promoted after this run was handed its length
    return f.experiment_paused ? step(trial_step::pause, {"trial paused"}) : step(trial_step::requeue);
  if (f.run_length > f.trained)
    return ended(pb::STATE_ERROR, "the worker exited without training to " + std::to_string(f.run_length) + " " +
                                      config::to_string(f.unit));
  return step(trial_step::wait, {"trained " + std::to_string(f.trained) + " " + config::to_string(f.unit) +
                                 ": the slots are free while the searcher decides what follows"});
}

trial_decision after_failure(const trial_facts& f, const pb::ContainerExited& exit) {
  const auto reason = failed(f) && !f.report->message.empty()
                          ? f.report->message + " (" + describe_exit(exit) + ")"
                          : describe_exit(exit);
  std::vector<std::string> notes{"trial failed: " + reason};
  if (reported(f, pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS)) {  // running it again would fail the same way
    const std::string invalid = "invalid hyperparameters";
    return ended(pb::STATE_ERROR,
                 reason.rfind(invalid, 0) == 0 ? reason : invalid + ": the trial reported them (" + reason + ")",
                 std::move(notes));
  }
  // An image that cannot be pulled now will not be pulled a moment later either.
  if (reported(f, pb::WORKER_OUTCOME_INVALID_ENVIRONMENT) || f.restarts >= f.max_restarts)
    return ended(pb::STATE_ERROR, reason, std::move(notes));
  notes.push_back("restarting the trial (restart " + std::to_string(f.restarts + 1) + " of " +
                  std::to_string(f.max_restarts) + ")");
  auto d = step(f.experiment_paused ? trial_step::pause : trial_step::restart, std::move(notes));
  d.counts_restart = true;
  return d;
}

} // namespace

std::string to_string(stop_intent x) {
  switch (x) {
    case stop_intent::none: return "none";
    case stop_intent::searcher_stop: return "searcher stop";
    case stop_intent::pause: return "pause";
    case stop_intent::preempt: return "preempt";
    case stop_intent::kill: return "kill";
  }
  return "none";
}

std::string to_string(trial_step x) {
  switch (x) {
    case trial_step::end: return "end";
    case trial_step::restart: return "restart";
    case trial_step::requeue: return "requeue";
    case trial_step::pause: return "pause";
    case trial_step::wait: return "wait";
  }
  return "end";
}

void merge(std::optional<worker_report>& current, worker_report incoming) {
  if (!current || weight(incoming.outcome) > weight(current->outcome))
    current = std::move(incoming);
}

void begin_run(trial_facts& f) {
  f.intent = stop_intent::none;
  f.report.reset();
  f.chief_reported = false;
}

void record_report(trial_facts& f, worker_report report, bool from_chief) {
  merge(f.report, std::move(report));
  f.chief_reported = f.chief_reported || from_chief;
}

std::optional<pb::State> stopping_state(const trial_facts& f) {
  if (f.intent == stop_intent::kill)
    return pb::STATE_STOPPING_KILLED;
  if (f.searcher_closed)
    return pb::STATE_STOPPING_COMPLETED;
  if (reported(f, pb::WORKER_OUTCOME_USER_CANCELED))
    return pb::STATE_STOPPING_CANCELED;
  return std::nullopt;
}

trial_decision decide(const trial_facts& f, const pb::ContainerExited& exit) {
  if (f.intent == stop_intent::kill)
    return ended(pb::STATE_CANCELED, "", {"trial killed: " + describe_exit(exit)});
  if (f.searcher_closed)
    return ended(pb::STATE_COMPLETED);
  if (exit.cause() == pb::EXIT_CAUSE_UNSCHEDULABLE)  // asking again would be refused again
    return ended(pb::STATE_ERROR, describe_exit(exit));
  if (reported(f, pb::WORKER_OUTCOME_USER_CANCELED))  // the process said so: no restarts
    return ended(pb::STATE_CANCELED, "the trial exited early: USER_CANCELED");
  // Lost with its agent before its chief said how it ended: the cluster's failure, not the
  // trial's, even if another worker failed for want of its peer. A pause or preemption in
  // progress treats it as the stop it asked for.
  const bool lost = exit.cause() == pb::EXIT_CAUSE_LOST_WITH_AGENT && !f.chief_reported;
  if (lost && !is_graceful_stop(f.intent))
    return run_again_unless_paused(
        f, {"the run was lost: " + describe_exit(exit) + "; running it again without counting a restart"});
  // What the worker reported counts when its agent was lost after it did.
  const bool clean = (ended_well(exit) || (exit.cause() == pb::EXIT_CAUSE_LOST_WITH_AGENT && f.chief_reported)) &&
                     !failed(f);
  const bool stopped = reported(f, pb::WORKER_OUTCOME_STOPPED);
  if (is_graceful_stop(f.intent) && !failed(f) && (!clean || stopped))
    return after_graceful_stop(f);
  if (clean && f.waits_at_length && !stopped)
    return at_length(f);
  if (clean)
    return ended(pb::STATE_COMPLETED);
  return after_failure(f, exit);
}

} // namespace det
