// The trial lifecycle as a table: for each way a run can end (what was asked of it, what its
// workers reported, how its containers ended, whether its experiment is paused) what the trial
// does next. One row per case; master/experiments/trial_lifecycle.hpp draws the states.

#include "master/experiments/trial_lifecycle.hpp"

#include <doctest/doctest.h>

using namespace det;

namespace {

// How the run's containers ended.
enum class ending { exit_0, exit_1, sigkill, lost, unschedulable, never_started };

pb::ContainerExited exited(ending e) {
  pb::ContainerExited x;
  x.set_allocation_id("7.1");
  switch (e) {
    case ending::exit_0: x.set_cause(pb::EXIT_CAUSE_EXITED); break;
    case ending::exit_1: x.set_cause(pb::EXIT_CAUSE_EXITED); x.set_exit_code(1); break;
    case ending::sigkill: x.set_cause(pb::EXIT_CAUSE_EXITED); x.set_signal(9); break;
    case ending::lost:
      x.set_cause(pb::EXIT_CAUSE_LOST_WITH_AGENT);
      x.set_exit_code(-1);
      x.set_message("agent a was lost");
      break;
    case ending::unschedulable:
      x.set_cause(pb::EXIT_CAUSE_UNSCHEDULABLE);
      x.set_exit_code(-1);
      x.set_message("the trial needs 6 slots");
      break;
    case ending::never_started:
      x.set_cause(pb::EXIT_CAUSE_NEVER_STARTED);
      x.set_exit_code(-1);
      x.set_message("the allocation was killed before its container started");
      break;
  }
  return x;
}

constexpr auto none = pb::WORKER_OUTCOME_UNSPECIFIED;  // the worker reported nothing
constexpr auto completed = pb::WORKER_OUTCOME_COMPLETED;
constexpr auto stopped = pb::WORKER_OUTCOME_STOPPED;
constexpr auto errored = pb::WORKER_OUTCOME_ERRORED;
constexpr auto invalid = pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS;
constexpr auto user_canceled = pb::WORKER_OUTCOME_USER_CANCELED;

struct row {
  const char* what;
  stop_intent intent;
  pb::WorkerOutcome reported;
  ending end;
  bool experiment_paused;
  bool searcher_closed;
  trial_step step;
  pb::State end_state;  // for end
  bool counts_restart;
};

constexpr auto S_NONE = pb::STATE_UNSPECIFIED;

// clang-format off
const row table[] = {
  // what                                                 intent                       reported       end                       paused  closed  step                  end state             counted
  {"a clean run completes",                              stop_intent::none,           completed,     ending::exit_0,           false,  false,  trial_step::end,      pb::STATE_COMPLETED,  false},
  {"a crash with restarts left restarts",                stop_intent::none,           errored,       ending::exit_1,           false,  false,  trial_step::restart,  S_NONE,               true},
  {"a crash without a report restarts",                  stop_intent::none,           none,          ending::sigkill,          false,  false,  trial_step::restart,  S_NONE,               true},
  {"a crash while its experiment is paused pauses",      stop_intent::none,           errored,       ending::exit_1,           true,   false,  trial_step::pause,    S_NONE,               true},
  {"invalid hyperparameters end in ERROR",               stop_intent::none,           invalid,       ending::exit_1,           false,  false,  trial_step::end,      pb::STATE_ERROR,      false},
  {"a user's cancel ends CANCELED",                      stop_intent::none,           user_canceled, ending::exit_0,           false,  false,  trial_step::end,      pb::STATE_CANCELED,   false},
  {"unschedulable ends in ERROR",                        stop_intent::none,           none,          ending::unschedulable,    false,  false,  trial_step::end,      pb::STATE_ERROR,      false},
  {"a run that never started counts a restart",          stop_intent::none,           none,          ending::never_started,    false,  false,  trial_step::restart,  S_NONE,               true},
  {"a lost run runs again uncounted",                    stop_intent::none,           none,          ending::lost,             false,  false,  trial_step::requeue,  S_NONE,               false},
  {"a lost run of a paused experiment pauses",           stop_intent::none,           none,          ending::lost,             true,   false,  trial_step::pause,    S_NONE,               false},
  {"a report before the agent was lost counts",          stop_intent::none,           completed,     ending::lost,             false,  false,  trial_step::end,      pb::STATE_COMPLETED,  false},
  {"a failure reported before the loss counts",          stop_intent::none,           errored,       ending::lost,             false,  false,  trial_step::restart,  S_NONE,               true},
  {"kill wins over everything",                          stop_intent::kill,           errored,       ending::lost,             true,   true,   trial_step::end,      pb::STATE_CANCELED,   false},
  {"kill of a queued run",                               stop_intent::kill,           none,          ending::never_started,    false,  false,  trial_step::end,      pb::STATE_CANCELED,   false},
  {"a searcher stop completes",                          stop_intent::searcher_stop,  stopped,       ending::exit_0,           false,  true,   trial_step::end,      pb::STATE_COMPLETED,  false},
  {"a searcher stop completes even if the run failed",   stop_intent::searcher_stop,  errored,       ending::exit_1,           false,  true,   trial_step::end,      pb::STATE_COMPLETED,  false},
  {"a pause that stopped the run pauses",                stop_intent::pause,          stopped,       ending::exit_0,           true,   false,  trial_step::pause,    S_NONE,               false},
  {"activate before the pause landed runs again",        stop_intent::pause,          stopped,       ending::exit_0,           false,  false,  trial_step::requeue,  S_NONE,               false},
  {"pausing and its agent lost: paused, uncounted",      stop_intent::pause,          none,          ending::lost,             true,   false,  trial_step::pause,    S_NONE,               false},
  {"pausing, lost, then activated: runs again",          stop_intent::pause,          none,          ending::lost,             false,  false,  trial_step::requeue,  S_NONE,               false},
  {"pausing, the worker exits, then its agent is lost",  stop_intent::pause,          stopped,       ending::lost,             true,   false,  trial_step::pause,    S_NONE,               false},
  {"a pause the run finished before completes",          stop_intent::pause,          completed,     ending::exit_0,           true,   false,  trial_step::end,      pb::STATE_COMPLETED,  false},
  {"a pause SIGKILLed after its grace pauses",           stop_intent::pause,          none,          ending::sigkill,          true,   false,  trial_step::pause,    S_NONE,               false},
  {"a failure while pausing is a failure",               stop_intent::pause,          errored,       ending::exit_1,           true,   false,  trial_step::pause,    S_NONE,               true},
  {"invalid hyperparameters while pausing end",          stop_intent::pause,          invalid,       ending::exit_1,           true,   false,  trial_step::end,      pb::STATE_ERROR,      false},
  {"a preemption requeues",                              stop_intent::preempt,        stopped,       ending::exit_0,           false,  false,  trial_step::requeue,  S_NONE,               false},
  {"a preemption past its timeout requeues",             stop_intent::preempt,        none,          ending::sigkill,          false,  false,  trial_step::requeue,  S_NONE,               false},
  {"a preemption of a paused experiment pauses",         stop_intent::preempt,        stopped,       ending::exit_0,           true,   false,  trial_step::pause,    S_NONE,               false},
  {"preempted and lost: requeued uncounted",             stop_intent::preempt,        none,          ending::lost,             false,  false,  trial_step::requeue,  S_NONE,               false},
  {"a failure while preempted counts",                   stop_intent::preempt,        errored,       ending::exit_1,           false,  false,  trial_step::restart,  S_NONE,               true},
  {"preempted after it completed completes",             stop_intent::preempt,        completed,     ending::exit_0,           false,  false,  trial_step::end,      pb::STATE_COMPLETED,  false},
};
// clang-format on

trial_facts facts_of(const row& r) {
  trial_facts f;
  f.intent = r.intent;
  f.searcher_closed = r.searcher_closed;
  f.experiment_paused = r.experiment_paused;
  if (r.reported != none) {
    f.report = worker_report{r.reported, r.reported == errored ? "the loss is NaN" : ""};
    f.chief_reported = true;
  }
  f.length = f.run_length = f.trained = 100;
  f.restarts = 0;
  f.max_restarts = 5;
  return f;
}

} // namespace

TEST_CASE("what the end of a run means, one row per case") {
  for (const auto& r : table) {
    CAPTURE(r.what);
    auto d = decide(facts_of(r), exited(r.end));
    CHECK(to_string(d.step) == to_string(r.step));
    CHECK(d.counts_restart == r.counts_restart);
    if (r.step == trial_step::end)
      CHECK(pb::State_Name(d.end_state) == pb::State_Name(r.end_state));
  }
}

TEST_CASE("a peer's failure, then the chief's agent is lost: the run was lost, nothing counted") {
  trial_facts f;
  f.report = worker_report{errored, "worker 1: the peer hung up"};  // rank 1 lost its peer
  f.chief_reported = false;
  auto d = decide(f, exited(ending::lost));
  CHECK(d.step == trial_step::requeue);
  CHECK_FALSE(d.counts_restart);
}

TEST_CASE("the last restart's failure ends in ERROR with the worker's sentence") {
  trial_facts f;
  f.report = worker_report{errored, "the loss is NaN"};
  f.chief_reported = true;
  f.restarts = 2;
  f.max_restarts = 2;
  auto d = decide(f, exited(ending::exit_1));
  CHECK(d.step == trial_step::end);
  CHECK(d.end_state == pb::STATE_ERROR);
  CHECK(d.reason == "the loss is NaN (the worker exited with code 1)");
  f.restarts = 1;
  d = decide(f, exited(ending::exit_1));
  CHECK(d.step == trial_step::restart);
  REQUIRE(d.notes.size() == 2);
  CHECK(d.notes[1] == "restarting the trial (restart 2 of 2)");
}

TEST_CASE("invalid hyperparameters say so once in the reason") {
  trial_facts f;
  f.report = worker_report{invalid, "invalid hyperparameters: lr must be positive"};
  auto d = decide(f, exited(ending::exit_1));
  CHECK(d.reason == "invalid hyperparameters: lr must be positive (the worker exited with code 1)");
  f.report = worker_report{invalid, ""};  // a Core API process's early exit carries no sentence
  d = decide(f, exited(ending::exit_1));
  CHECK(d.reason == "invalid hyperparameters: the trial reported them (the worker exited with code 1)");
}

TEST_CASE("a promotion-based search's trial waits at its length, runs on when promoted, fails short of it") {
  trial_facts f;
  f.waits_at_length = true;
  f.report = worker_report{completed, ""};
  f.length = f.run_length = f.trained = 100;
  CHECK(decide(f, exited(ending::exit_0)).step == trial_step::wait);
  f.length = 300;  // promoted while the run was ending
  CHECK(decide(f, exited(ending::exit_0)).step == trial_step::requeue);
  f.experiment_paused = true;
  CHECK(decide(f, exited(ending::exit_0)).step == trial_step::pause);
  f = trial_facts{};
  f.waits_at_length = true;
  f.length = f.run_length = 100;
  f.trained = 60;
  auto d = decide(f, exited(ending::exit_0));
  CHECK(d.end_state == pb::STATE_ERROR);
  CHECK(d.reason == "the worker exited without training to 100 batches");
}

TEST_CASE("what is asked of a run only grows: none < searcher stop < pause < preempt < kill") {
  CHECK(raise(stop_intent::none, stop_intent::pause) == stop_intent::pause);
  CHECK(raise(stop_intent::kill, stop_intent::pause) == stop_intent::kill);
  CHECK(raise(stop_intent::pause, stop_intent::searcher_stop) == stop_intent::pause);
  CHECK(raise(stop_intent::preempt, stop_intent::kill) == stop_intent::kill);
}

TEST_CASE("a trial being stopped shows how it will end, in decide's precedence") {
  trial_facts f;
  f.intent = stop_intent::pause;
  CHECK_FALSE(stopping_state(f).has_value());  // a pause keeps the trial's state until the run ends
  f.report = worker_report{user_canceled, ""};
  CHECK(stopping_state(f) == pb::STATE_STOPPING_CANCELED);
  f.searcher_closed = true;  // closed during a pause: it will complete
  CHECK(stopping_state(f) == pb::STATE_STOPPING_COMPLETED);
  f.intent = stop_intent::kill;
  CHECK(stopping_state(f) == pb::STATE_STOPPING_KILLED);
}

TEST_CASE("the report that says most about a run is kept") {
  std::optional<worker_report> r;
  merge(r, {completed, ""});
  merge(r, {errored, "worker 1: the peer hung up"});  // another worker's failure is not hidden
  merge(r, {stopped, ""});
  CHECK(r->outcome == errored);
  CHECK(r->message == "worker 1: the peer hung up");
  merge(r, {invalid, ""});  // a Core API process's early exit, then its exit code
  merge(r, {errored, "exited with code 1"});
  CHECK(r->outcome == invalid);
}
