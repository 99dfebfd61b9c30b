#pragma once
// A trial's lifecycle as data: its states, what may be asked of a run, what its worker reports,
// and the pure function that decides what the end of a run means. The trial actor keeps these
// facts and carries out the decisions; tests drive decide() as a table (trial_lifecycle_test).
//
//                 +---------------- requeue (lost with its agent, preempted, restart) ----------+
//                 v                                                                             |
//   (created) -> QUEUED --container started--> STARTING --worker hello--> RUNNING ---run ends---+
//                 |  ^                                                      |   |               |
//                 |  +---------- activate (no run) ---- PAUSED <--pause-----+   |               |
//                 |                                       ^  (run ends while     |               |
//                 |                                       |   its experiment is  |               |
//                 |                                       |   paused)            |               |
//                 |                                       +----------------------|---------------+
//                 |                                                              |
//                 |   kill --> STOPPING_KILLED ------(run ends)----------------> CANCELED
//                 |   searcher closes --> STOPPING_COMPLETED --(run ends)-----> COMPLETED
//                 |   worker: USER_CANCELED --> STOPPING_CANCELED --(run ends)-> CANCELED
//                 |   run ends clean at its length (promotion search) ------> ACTIVE (waits for
//                 |                                                              the searcher)
//                 +-- kill / searcher close with no run: at once to CANCELED / COMPLETED
//
//   A run that ends in failure: restart (counted) while restarts < max_restarts, else ERROR;
//   invalid hyperparameters and an unschedulable request go to ERROR at once.
//
// What a run is asked (stop_intent) only grows in severity while it lasts, as Determined's
// patchState allows: none < searcher stop < pause < preempt < kill. A pause and a preemption
// both stop the run gracefully (SIGTERM, checkpoint); what follows is the same for both and
// depends on whether the experiment is paused when the run ends. decide() answers the question
// "what happens when a worker exits while its trial is pausing and its agent is lost?" in one
// place: the rows of its table are the order of the checks below.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/length.hpp"
#include "messages/cluster.pb.h"
#include "messages/common.pb.h"
#include "messages/trial.pb.h"

namespace det {

/// What has been asked of a trial's current run, weakest first.
enum class stop_intent : uint8_t {
  none,           ///< train on
  searcher_stop,  ///< the searcher closed the trial: stop gracefully, it is complete
  pause,          ///< its experiment is pausing: stop gracefully, keep the trial
  preempt,        ///< the scheduler wants the slots: stop gracefully, queue again
  kill,           ///< stop at once, the trial is canceled
};

std::string to_string(stop_intent x);

/// `current` raised to `wanted`; a weaker request leaves it as it is.
constexpr stop_intent raise(stop_intent current, stop_intent wanted) {
  return wanted > current ? wanted : current;
}

/// Whether `x` stops the run gracefully (SIGTERM, a checkpoint) to run the trial again later.
constexpr bool is_graceful_stop(stop_intent x) {
  return x == stop_intent::pause || x == stop_intent::preempt;
}

/// How a run's workers said it ended: the report that says most wins (see merge).
struct worker_report {
  pb::WorkerOutcome outcome = pb::WORKER_OUTCOME_UNSPECIFIED;
  std::string message;  ///< what went wrong, "" when nothing did
};

/// Keeps in `current` whichever of it and `incoming` says most about the run: a user's cancel,
/// then invalid hyperparameters, then an error, then a stop, then completion. A chief's clean
/// report never hides another worker's failure, and a Core API process's early exit is not
/// overwritten by the exit code that follows it.
void merge(std::optional<worker_report>& current, worker_report incoming);

/// Everything decide() looks at when a run's containers are gone.
struct trial_facts {
  stop_intent intent = stop_intent::none;  ///< what was asked of the run that ended
  bool searcher_closed = false;            ///< the searcher closed the trial: it trains no more
  bool experiment_paused = false;          ///< its experiment is paused now
  bool waits_at_length = false;            ///< promotion-based search: at its length it waits
  std::optional<worker_report> report;     ///< what the workers reported, if they did
  bool chief_reported = false;  ///< the chief (or the Core API process) said how the run ended
  config::length_unit unit = config::length_unit::batches;
  int64_t length = 0;      ///< what the searcher asks for now
  int64_t run_length = 0;  ///< what the run that ended was handed
  int64_t trained = 0;     ///< as far as stored reports say
  int32_t restarts = 0;
  int32_t max_restarts = 0;
  std::string latest_checkpoint;  ///< "" for none: where the next run continues from
};

/// Forgets what was asked of the last run and what its workers reported: a new run begins.
void begin_run(trial_facts& facts);

/// Keeps a worker's report (see merge); `from_chief` for the chief's, or a Core API process's.
void record_report(trial_facts& facts, worker_report report, bool from_chief);

/// What the trial does next.
enum class trial_step : uint8_t {
  end,      ///< the trial is over, in end_state
  restart,  ///< a failed run counts a restart, and another run is queued
  requeue,  ///< another run is queued; nothing is counted
  pause,    ///< it waits in PAUSED for its experiment to be activated
  wait,     ///< ACTIVE without slots: the searcher decides what follows
};

std::string to_string(trial_step x);

struct trial_decision {
  trial_step step = trial_step::end;
  pb::State end_state = pb::STATE_UNSPECIFIED;  ///< for end
  std::string reason;                           ///< for end: the trial's exit reason
  bool counts_restart = false;  ///< restart, or a pause after a failure: the failure is counted
  std::vector<std::string> notes;  ///< lines for the trial's log, in order
};

/// What the end of a run means, given what was asked of it and what its workers reported.
trial_decision decide(const trial_facts& facts, const pb::ContainerExited& exit);

/// The state a trial with a run shows while a stop is under way, in decide()'s precedence:
/// STOPPING_KILLED for a kill, STOPPING_COMPLETED once the searcher closed it, STOPPING_CANCELED
/// once its process canceled itself; nullopt when it keeps the state it has.
std::optional<pb::State> stopping_state(const trial_facts& facts);

} // namespace det
