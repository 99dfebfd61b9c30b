// A trial on the master. It asks for an allocation, hands its worker the
// spec, relays metrics to persistence and validations to its experiment, and
// decides how the trial ends when the container exits.
//
//   QUEUED --(container started)--> STARTING --(worker hello)--> RUNNING
//     ^                                                            |
//     +---- restart (failure, restarts < max_restarts) <-----------+
//                                                                  |
//          COMPLETED (exit 0) | ERROR (failure, no restarts left) | CANCELED (killed)
//
// Under a promotion-based search (asha, pbt) a trial that reached its length
// releases its slots and waits (ACTIVE) until the searcher asks for more
// (a new run) or closes it (COMPLETED).

#include <csignal>
#include <cstdio>
#include <random>
#include <cstring>
#include <utility>

#include "messages/timestamp.hpp"

#include "actors/container_exit.hpp"
#include "actors/spawn.hpp"
#include "actors/state_text.hpp"
#include "caf/all.hpp"
#include "messages/caf_types.hpp"

namespace det {
namespace {

struct trial_state {
  static inline const char* name = "trial";
  trial_setup setup;
  std::string length_unit = "batches";
  int64_t length = 0;
  int64_t trained = 0;  // in length_unit, as far as the worker reported
  int64_t run_length = 0;     // the length the current (or last) run was handed
  bool user_canceled = false;  // a Core API process exited early as USER_CANCELED
  bool waiting = false;   // at its length, no allocation: the searcher decides what follows
  bool paused = false;    // its experiment is paused
  allocation_actor allocation;
  int32_t runs = 0;
  int32_t hello_run = 0;  // the run whose worker said hello last
  bool stopping = false;  // searcher asked for a graceful stop
  bool pausing = false;   // the experiment is pausing: stop gracefully, keep the trial
  bool preempting = false;  // the scheduler wants the slots: stop gracefully, queue again
  bool resume = false;    // activated again before the pause took effect
  bool killed = false;
  bool worker_stopped = false;  // the worker stopped on request before its length
  bool invalid_hparams = false; // the worker rejected its hyperparameters
  bool worker_failed = false;
  bool worker_exited = false;  // the worker reported its own exit (it may outlive its agent's report)
  std::string worker_message;
  std::string token;  // the current run's allocation token (Core API calls carry it)
  double reported_progress = 0;  // a Core API process's own progress through its operation
  // The highest step stored for "training" and "validation": a run that resumed from a
  // checkpoint reports the steps after it again, and those already stored are dropped.
  std::map<std::string, int64_t> stored_steps;
  // The highest step sent to storage and not yet answered: a copy of a report still on its way
  // (a worker that timed out and sent it again) is dropped too.
  std::map<std::string, int64_t> sending_steps;
  // The current run's rendezvous keys: the workers of a run on several agents find each other here.
  std::map<std::string, std::string> rendezvous;
};

using self_ptr = trial_actor::stateful_pointer<trial_state>;

pb::Trial& trial(self_ptr self) {
  return self->state.setup.trial;
}

void log_line(self_ptr self, const std::string& text) {
  pb::LogBatch batch;
  auto* e = batch.add_entries();
  e->set_trial_id(trial(self).id());
  e->set_stream("master");
  e->set_text(text);
  *e->mutable_time() = det::now();
  self->send(self->state.setup.handles.persistence, std::move(batch));
}

void set_state(self_ptr self, pb::State s) {
  trial(self).set_state(s);
  self->send(self->state.setup.handles.persistence, update_atom::value, trial(self));
}

std::string new_token() {
  std::random_device device;
  char text[33];
  std::snprintf(text, sizeof text, "%08x%08x%08x%08x", device(), device(), device(), device());
  return text;
}

// "<trial>.<run>": the id of the trial's current (latest) run.
std::string run_id(self_ptr self) {
  return std::to_string(trial(self).id()) + "." + std::to_string(self->state.runs);
}

// Spawns the allocation of the current run, `reclaim`ing a container that already runs it or
// asking for slots to launch one.
void spawn_run(self_ptr self, bool reclaim) {
  auto& st = self->state;
  st.worker_failed = false;
  st.worker_exited = false;
  st.worker_stopped = false;
  st.worker_message.clear();
  st.rendezvous.clear();
  st.allocation = spawn_allocation(self->system(), run_id(self), trial(self), st.setup.slots_per_trial,
                                   st.setup.one_agent, caf::actor_cast<caf::actor>(self),
                                   st.setup.handles.pool(st.setup.resource_pool), reclaim);
  self->send(st.setup.directory, register_atom::value, std::string{"allocation"}, run_id(self),
             caf::actor_cast<caf::actor>(st.allocation));
}

void start_run(self_ptr self) {
  auto& st = self->state;
  trial(self).set_runs(++st.runs);  // stored with the QUEUED state below, as is the token
  if (st.runs > 1 && !trial(self).latest_checkpoint_uuid().empty())
    log_line(self, "run " + std::to_string(st.runs) + " continues from checkpoint " +
                       trial(self).latest_checkpoint_uuid());
  st.waiting = false;
  st.token = new_token();
  trial(self).set_allocation_token(st.token);
  spawn_run(self, false);
  set_state(self, pb::STATE_QUEUED);
}

// Restored with a run in progress: its worker may have outlived the master (its agent keeps it
// for agent_reconnect_wait), so the run is taken back where it runs, under its old allocation id
// and token. If no agent reports it in time, the run is lost and another starts.
void reclaim_run(self_ptr self) {
  auto& st = self->state;
  log_line(self, "the master restarted: waiting up to " + std::to_string(st.setup.handles.agent_reconnect_wait_s) +
                     " s for run " + run_id(self) + " to come back");
  st.token = trial(self).allocation_token();
  spawn_run(self, true);
}

// How far a report says the trial trained, in the unit the searcher set.
int64_t length_in(const std::string& unit, const pb::MetricReport& r) {
  if (unit == "records")
    return r.total_records();
  if (unit == "epochs")
    return static_cast<int64_t>(r.total_epochs() + 1e-9);
  return r.total_batches();
}

void end(self_ptr self, pb::State final_state, const std::string& reason) {
  auto& t = trial(self);
  t.set_exit_reason(reason);
  *t.mutable_end_time() = det::now();
  set_state(self, final_state);
  caf::anon_send(self->state.setup.experiment, exited_atom::value, t.request_id(), final_state,
                 self->state.invalid_hparams);
  self->quit();
}

void wait_for_searcher(self_ptr self) {
  self->state.waiting = true;
  log_line(self, "trained " + std::to_string(self->state.trained) + " " + self->state.length_unit +
                     ": the slots are free while the searcher decides what follows");
  set_state(self, pb::STATE_ACTIVE);
}

void on_container_exit(self_ptr self, const pb::ContainerExited& e) {
  auto& st = self->state;
  st.allocation = nullptr;
  st.token.clear();  // calls from the run that ended are refused
  // An agent lost with the container: what the worker itself reported is how the run ended, if
  // it reported; otherwise the run is lost, which is the cluster's failure and not the trial's.
  const bool lost = e.transient() && !st.worker_exited;
  bool clean = ((e.transient() && st.worker_exited) || ended_well(e)) && !st.worker_failed && !st.invalid_hparams;
  if (st.killed) {
    log_line(self, "trial killed: " + describe_exit(e));
    end(self, pb::STATE_CANCELED, "");
    return;
  }
  if (st.stopping) {
    end(self, pb::STATE_COMPLETED, "");
    return;
  }
  if (e.unschedulable()) {  // asking again would be refused again
    end(self, pb::STATE_ERROR, describe_exit(e));
    return;
  }
  if (st.user_canceled) {  // the process said so: no restarts
    end(self, pb::STATE_CANCELED, "the trial exited early: USER_CANCELED");
    return;
  }
  if (lost && !st.pausing && !st.preempting) {  // a pause or preemption re-queues it below
    log_line(self, "the run was lost: " + describe_exit(e) + "; running it again without counting a restart");
    if (st.paused) {
      set_state(self, pb::STATE_PAUSED);
      return;
    }
    start_run(self);
    return;
  }
  if (std::exchange(st.preempting, false) && !st.invalid_hparams && !st.worker_failed && (!clean || st.worker_stopped)) {
    st.pausing = false;
    st.resume = false;
    if (st.paused) {
      log_line(self, "preempted, and its experiment is paused");
      set_state(self, pb::STATE_PAUSED);
      return;
    }
    log_line(self, "preempted: back in the queue" +
                       (trial(self).latest_checkpoint_uuid().empty()
                            ? std::string{}
                            : ", to continue from checkpoint " + trial(self).latest_checkpoint_uuid()));
    start_run(self);
    return;
  }
  if (st.pausing && !st.invalid_hparams) {
    st.pausing = false;
    if (!clean || st.worker_stopped) {  // it had not finished: resume it on activate
      log_line(self, "trial paused");
      if (std::exchange(st.resume, false))
        start_run(self);
      else
        set_state(self, pb::STATE_PAUSED);
      return;
    }
  }
  if (clean && st.setup.waits_at_length && !st.worker_stopped) {
    if (st.length > st.run_length) {  // promoted after this run was handed its length
      if (st.paused) {
        log_line(self, "trial paused");
        set_state(self, pb::STATE_PAUSED);
      } else {
        start_run(self);
      }
    } else if (st.run_length > st.trained) {
      end(self, pb::STATE_ERROR, "the worker exited without training to " + std::to_string(st.run_length) + " " +
                                     st.length_unit);
    } else {
      wait_for_searcher(self);
    }
    return;
  }
  if (clean) {
    end(self, pb::STATE_COMPLETED, "");
    return;
  }
  auto reason = st.worker_failed && !st.worker_message.empty()
                    ? st.worker_message + " (" + describe_exit(e) + ")"
                    : describe_exit(e);
  log_line(self, "trial failed: " + reason);
  auto& t = trial(self);
  if (st.invalid_hparams) {  // running it again would fail the same way
    const std::string invalid = "invalid hyperparameters";
    end(self, pb::STATE_ERROR, reason.rfind(invalid, 0) == 0 ? reason : invalid + ": the trial reported them (" + reason + ")");
    return;
  }
  if (t.restarts() < st.setup.max_restarts) {
    t.set_restarts(t.restarts() + 1);
    log_line(self, "restarting the trial (restart " + std::to_string(t.restarts()) + " of " +
                       std::to_string(st.setup.max_restarts) + ")");
    start_run(self);
    return;
  }
  end(self, pb::STATE_ERROR, reason);
}

// Metrics from the worker or a Core API process, once stored: the trial's latest values, and
// validations of the searcher metric for the experiment.
void take_metrics(self_ptr self, const pb::MetricBatch& batch) {
  auto& st = self->state;
  auto& t = trial(self);
  for (const auto& r : batch.reports()) {
    t.set_total_batches(std::max(t.total_batches(), r.total_batches()));
    st.trained = std::max(st.trained, length_in(st.length_unit, r));
    auto* latest = r.group() == "validation" ? t.mutable_latest_validation() : t.mutable_latest_training();
    for (auto& [k, v] : r.metrics())
      (*latest)[k] = v;
    if (r.group() == "validation") {
      auto it = r.metrics().find(st.setup.searcher_metric);
      if (it != r.metrics().end())
        caf::anon_send(st.setup.experiment, validated_atom::value, t.request_id(), it->second,
                       length_in(st.length_unit, r));
    }
  }
}

bool deduplicated(const std::string& group) { return group == "training" || group == "validation"; }

// Stores what `batch` holds that is new (see stored_steps); `done` hears how many reports were
// stored once they are committed, or the error. Only then do they count.
template <class Done>
void store_metrics(self_ptr self, pb::MetricBatch batch, Done done) {
  auto& st = self->state;
  pb::MetricBatch fresh;
  for (auto& r : *batch.mutable_reports()) {
    if (deduplicated(r.group())) {
      // sending_steps is never below stored_steps: it moves first and falls back to it on failure.
      auto sending = st.sending_steps.find(r.group());
      if (sending != st.sending_steps.end() && r.total_batches() <= sending->second)
        continue;
    }
    r.set_trial_id(trial(self).id());
    if (!r.has_time())
      *r.mutable_time() = det::now();
    *fresh.add_reports() = std::move(r);
  }
  if (fresh.reports_size() == 0) {
    done(int64_t{0});
    return;
  }
  for (const auto& r : fresh.reports())
    if (deduplicated(r.group())) {
      auto& mark = st.sending_steps[r.group()];
      mark = std::max(mark, r.total_batches());
    }
  self->request(st.setup.handles.persistence, std::chrono::seconds(30), fresh)
      .then(
          [=](int64_t stored) mutable {
            for (const auto& r : fresh.reports())
              if (deduplicated(r.group())) {
                auto& mark = self->state.stored_steps[r.group()];
                mark = std::max(mark, r.total_batches());
              }
            take_metrics(self, fresh);
            done(stored);
          },
          [=](caf::error& e) mutable {
            self->state.sending_steps = self->state.stored_steps;  // not stored: may be sent again
            done(caf::make_error(caf::sec::runtime_error, "the metrics were not stored: " +
                                                              error_sentence(self->system(), e)));
          });
}

// Records a checkpoint; only a committed one is named to the experiment, since
// a PBT copy's row refers to it.
template <class Done>
void record_checkpoint(self_ptr self, pb::Checkpoint c, Done done) {
  auto& t = trial(self);
  c.set_trial_id(t.id());
  c.set_experiment_id(t.experiment_id());
  c.set_storage_path(self->state.setup.checkpoint_root);
  pb::MetricReport at;  // the checkpoint's progress, measured as the searcher measures it
  at.set_total_batches(c.steps_completed());
  at.set_total_records(c.total_records());
  at.set_total_epochs(c.total_epochs());
  auto length = length_in(self->state.length_unit, at);
  auto uuid = c.uuid();
  self->request(self->state.setup.handles.persistence, std::chrono::seconds(30), std::move(c))
      .then(
          [=](bool recorded) mutable {
            if (recorded) {
              trial(self).set_latest_checkpoint_uuid(uuid);
              caf::anon_send(self->state.setup.experiment, update_atom::value, trial(self).request_id(), uuid,
                             length);
            }
            done(recorded);
          },
          [=](caf::error&) mutable { done(false); });
}

// A report from a worker whose run is over (its agent was given up for lost while it went on, or
// it outlived a preemption): it must not count. Reports without an allocation id are the current
// run's by construction (the Core API checks its token instead).
bool from_stale_run(self_ptr self, const std::string& allocation_id) {
  return !allocation_id.empty() &&
         (!self->state.allocation ||
          allocation_id != run_id(self));
}

pb::CoreApiReply refusal(int status, const std::string& sentence) {
  pb::CoreApiReply reply;
  reply.set_status(status);
  reply.set_error(sentence);
  return reply;
}

// A Core API process's call: it must carry the token of the trial's current run.
caf::result<pb::CoreApiReply> core_api(self_ptr self, pb::CoreApiCall& call) {
  auto& st = self->state;
  auto id = std::to_string(trial(self).id());
  if (call.token().empty() || call.token() != st.token)
    return refusal(403, "the allocation token does not belong to the current run of trial " + id);
  pb::CoreApiReply reply;
  switch (call.call_case()) {
    case pb::CoreApiCall::kMetrics: {
      pb::MetricBatch batch;
      *batch.add_reports() = std::move(*call.mutable_metrics());
      auto rp = self->make_response_promise<pb::CoreApiReply>();
      store_metrics(self, std::move(batch), [rp](caf::expected<int64_t> stored) mutable {
        if (stored)
          rp.deliver(pb::CoreApiReply{});
        else
          rp.deliver(refusal(503, "the master could not store the metrics; report them again"));
      });
      return rp;
    }
    case pb::CoreApiCall::kCheckpoint: {
      if (call.checkpoint().uuid().empty())
        return refusal(400, "a checkpoint needs its uuid: the name of its directory under DET_CHECKPOINT_DIR");
      auto promise = self->make_response_promise<pb::CoreApiReply>();
      record_checkpoint(self, std::move(*call.mutable_checkpoint()), [promise](bool recorded) mutable {
        promise.deliver(recorded ? pb::CoreApiReply{} : refusal(500, "the master could not record the checkpoint"));
      });
      return promise;
    }
    case pb::CoreApiCall::kSearcherOperation:
      reply.set_length(st.length);
      reply.set_unit(st.length_unit);
      reply.set_completed(st.stopping || st.trained >= st.length);
      return reply;
    case pb::CoreApiCall::kProgress:
      if (call.progress() < 0 || call.progress() > 1)
        return refusal(400, "progress is a share of the searcher operation, from 0 to 1");
      st.reported_progress = call.progress();
      return reply;
    case pb::CoreApiCall::kCompletedLength:
      // The searcher reads its metric from the validations; completing is only checked.
      if (call.completed_length() > st.trained || call.completed_length() != st.length)
        return refusal(400, "trial " + id + " was asked to train to " + std::to_string(st.length) + " " +
                                st.length_unit + " and reported validations up to " + std::to_string(st.trained) +
                                "; report validation metrics there before completing the operation");
      reply.set_completed(true);
      return reply;
    case pb::CoreApiCall::kPreemption:
      reply.set_preempt(st.stopping || st.pausing || st.killed || st.preempting);
      return reply;
    case pb::CoreApiCall::kEarlyExit:
      if (call.early_exit() == "INVALID_HP") {
        st.invalid_hparams = true;
      } else if (call.early_exit() == "USER_CANCELED") {
        st.user_canceled = true;
      } else if (call.early_exit() == "ERRORED") {
        st.worker_failed = true;
        st.worker_message = "the trial exited early: " + call.early_exit();
      } else {
        return refusal(400, "an early exit's reason is INVALID_HP, ERRORED or USER_CANCELED, not \"" +
                                call.early_exit() + "\"");
      }
      return reply;
    default:
      return refusal(400, "the call names nothing to do");
  }
}

trial_actor::behavior_type trial_impl(self_ptr self, trial_setup setup) {
  self->state.setup = std::move(setup);
  self->state.runs = trial(self).runs();  // a restored trial numbers its runs on from the stored ones
  if (trial(self).stored_training_step() >= 0 && trial(self).runs() > 0)
    self->state.stored_steps["training"] = trial(self).stored_training_step();
  if (trial(self).stored_validation_step() >= 0 && trial(self).runs() > 0)
    self->state.stored_steps["validation"] = trial(self).stored_validation_step();
  self->state.sending_steps = self->state.stored_steps;
  *trial(self).mutable_start_time() = det::now();
  if (!self->state.setup.start_note.empty())
    log_line(self, self->state.setup.start_note);
  self->state.paused = self->state.setup.start_paused;
  if (self->state.setup.start_waiting) {
    self->state.waiting = true;
    set_state(self, pb::STATE_ACTIVE);
  } else if (self->state.setup.start_paused) {
    set_state(self, pb::STATE_PAUSED);
  } else {
    const auto stored = self->state.setup.trial.state();
    if ((stored == pb::STATE_RUNNING || stored == pb::STATE_STARTING) && self->state.runs > 0 &&
        !trial(self).allocation_token().empty()) {
      reclaim_run(self);
    } else {
      if (stored != pb::STATE_QUEUED)  // restored after a master restart
        log_line(self, trial(self).latest_checkpoint_uuid().empty()
                           ? "the master restarted: the trial starts over"
                           : "the master restarted: the trial continues from checkpoint " +
                                 trial(self).latest_checkpoint_uuid());
      start_run(self);
    }
  }
  return {
      [=](pb::WorkerHello& hello) -> caf::result<pb::TrialSpec, trial_endpoint> {
        auto& st = self->state;
        if (hello.allocation_id().empty() || from_stale_run(self, hello.allocation_id()))  // a run that has ended
          return caf::make_error(caf::sec::invalid_argument, "allocation " + hello.allocation_id() +
                                                                 " is not the current run of trial " +
                                                                 std::to_string(trial(self).id()));
        pb::TrialSpec spec;
        spec.set_trial_id(trial(self).id());
        spec.set_experiment_id(trial(self).experiment_id());
        spec.set_config(st.setup.config);
        spec.set_hparams(trial(self).hparams());
        spec.set_seed(trial(self).seed());
        spec.set_validate_after_unit(st.length_unit);
        // The run's first hello fixes its length: the other workers of a run on several agents
        // must train to the same one, and a worker saying hello again after a reconnection
        // trains to what it was first given.
        if (std::exchange(st.hello_run, st.runs) != st.runs)
          st.run_length = st.length;
        spec.set_validate_after_length(st.run_length);
        spec.set_checkpoint_root(st.setup.checkpoint_root);
        spec.set_allocation_token(st.token);
        spec.set_reconnect_wait_s(st.setup.handles.agent_reconnect_wait_s);
        if (st.setup.model_definition)
          spec.set_model_definition(*st.setup.model_definition);
        const auto& latest = trial(self).latest_checkpoint_uuid();
        if (!latest.empty())
          spec.set_resume_checkpoint_dir(st.setup.checkpoint_root + "/" + latest);
        if (trial(self).latest_checkpoint_uuid().empty()) {
          spec.set_warm_start_checkpoint_dir(st.setup.warm_start_dir);
        }
        if (st.allocation)
          spec.set_allocation_id(run_id(self));
        if (trial(self).state() != pb::STATE_RUNNING)
          set_state(self, pb::STATE_RUNNING);
        return {spec, caf::actor_cast<trial_endpoint>(self)};
      },
      [=](pb::MetricBatch& batch) -> caf::result<int64_t> {
        if (from_stale_run(self, batch.allocation_id()))
          return caf::make_error(caf::sec::invalid_argument,
                                 "allocation " + batch.allocation_id() + " is not the current run of trial " +
                                     std::to_string(trial(self).id()) + ": stop training");
        auto rp = self->make_response_promise<int64_t>();
        store_metrics(self, std::move(batch), [rp](caf::expected<int64_t> stored) mutable {
          if (stored)
            rp.deliver(*stored);
          else
            rp.deliver(std::move(stored.error()));
        });
        return rp;
      },
      [=](pb::Checkpoint& c) -> caf::result<bool> {
        if (from_stale_run(self, c.allocation_id()))
          return false;
        auto promise = self->make_response_promise<bool>();
        record_checkpoint(self, std::move(c), [promise](bool recorded) mutable { promise.deliver(recorded); });
        return promise;
      },
      [=](pb::CoreApiCall& call) -> caf::result<pb::CoreApiReply> { return core_api(self, call); },
      [=](pb::Rendezvous& r) -> caf::result<pb::Rendezvous> {
        if (from_stale_run(self, r.allocation_id()))
          return caf::make_error(caf::sec::invalid_argument, "allocation " + r.allocation_id() +
                                                                 " is not the current run of trial " +
                                                                 std::to_string(trial(self).id()));
        auto& keys = self->state.rendezvous;
        if (r.set()) {
          keys[r.key()] = r.value();
        } else if (auto it = keys.find(r.key()); it != keys.end()) {
          r.set_found(true);
          r.set_value(it->second);
        }
        return r;
      },
      [=](pb::WorkerExit& e) {
        if (from_stale_run(self, e.allocation_id()))
          return true;
        if (e.rank() > 0) {  // another worker of a distributed run: only its failure is news
          if (!e.success() && !self->state.worker_failed) {
            self->state.worker_failed = true;
            self->state.worker_message = "worker " + std::to_string(e.rank()) + ": " + e.message();
          }
          return true;
        }
        self->state.worker_exited = true;
        self->state.worker_stopped = e.stopped();
        // A Core API process may have reported them already.
        self->state.invalid_hparams = self->state.invalid_hparams || e.invalid_hyperparameters();
        if (!e.success() && !self->state.worker_failed) {  // another worker's failure may have caused it
          self->state.worker_failed = true;
          self->state.worker_message = e.message();
        }
        return true;
      },
      [=](pb::ContainerStarted& started) {
        log_line(self, "container started on allocation " + started.allocation_id() + " (pid " +
                           std::to_string(started.pid()) + ")");
        if (trial(self).state() == pb::STATE_QUEUED)  // the worker's hello may come first
          set_state(self, pb::STATE_STARTING);
      },
      [=](pb::ContainerExited& e) { on_container_exit(self, e); },
      [=](update_atom, const std::string& unit, int64_t length) {
        auto& st = self->state;
        st.length_unit = unit;
        st.length = length;
        if (unit == "batches")
          trial(self).set_target_batches(length);
        if (st.waiting && length > st.run_length) {  // promoted, or its next PBT round
          st.waiting = false;
          if (st.paused)
            set_state(self, pb::STATE_PAUSED);
          else
            start_run(self);
        }
      },
      [=](update_atom, int32_t rung) {
        trial(self).set_rung(rung);
        self->send(self->state.setup.handles.persistence, update_atom::value, trial(self));
      },
      [=](stop_atom, bool early) {
        auto& st = self->state;
        st.stopping = true;
        if (early)
          trial(self).set_searcher_stopped(true);
        if (st.waiting || (!st.allocation && trial(self).state() == pb::STATE_PAUSED)) {  // nothing to stop
          end(self, pb::STATE_COMPLETED, "");
          return;
        }
        if (st.allocation)
          self->send(st.allocation, kill_atom::value, int32_t{SIGTERM});
      },
      [=](pause_atom) {
        auto& st = self->state;
        st.paused = true;
        st.resume = false;
        if (!st.allocation || st.killed || st.stopping)
          return;
        st.pausing = true;
        self->send(st.allocation, kill_atom::value, int32_t{SIGTERM});
      },
      [=](activate_atom) {
        self->state.paused = false;
        if (self->state.waiting)
          return;
        if (trial(self).state() == pb::STATE_PAUSED)
          start_run(self);
        else if (self->state.pausing)  // still stopping: run again once it has
          self->state.resume = true;
      },
      [=](preempt_atom) {
        auto& st = self->state;
        if (!st.allocation || st.killed || st.stopping || st.pausing || st.preempting)
          return;
        st.preempting = true;
        log_line(self, "preempted by the scheduler: checkpointing and giving its slots back");
        // The agent sends SIGKILL if it has not exited within preemption_timeout.
        self->send(st.allocation, kill_atom::value, int32_t{SIGTERM}, st.setup.preemption_timeout_s);
      },
      [=](kill_atom) {
        auto& st = self->state;
        st.killed = true;
        if (st.allocation)
          self->send(st.allocation, kill_atom::value, int32_t{SIGKILL});
        else
          end(self, pb::STATE_CANCELED, "");
      },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        auto& t = trial(self);
        state_text text{self};
        text.add("id", t.id())
            .add("experiment", t.experiment_id())
            .add("request id", t.request_id())
            .add("state", pb::State_Name(t.state()))
            .add("hparams", t.hparams())
            .add("seed", t.seed())
            .add("train to", std::to_string(st.length) + " " + st.length_unit)
            .add("batches trained", t.total_batches())
            .add("restarts", std::to_string(t.restarts()) + " of " +
                                 std::to_string(st.setup.max_restarts))
            .add("runs", st.runs)
            .add("waiting for the searcher", st.waiting ? "yes" : "no")
            .add("reported progress", st.reported_progress)
            .add("stopping", st.stopping ? "yes" : "no")
            .add("pausing", st.pausing ? "yes" : "no")
            .add("preempting", st.preempting ? "yes" : "no")
            .add("killed", st.killed ? "yes" : "no");
        for (auto& [k, v] : t.latest_training())
          text.add("latest " + k, v);
        for (auto& [k, v] : t.latest_validation())
          text.add("latest " + k, v);
        return text.str();
      },
  };
}

} // namespace

trial_actor spawn_trial(caf::actor_system& sys, trial_setup setup) {
  return sys.spawn(trial_impl, std::move(setup));
}

} // namespace det
