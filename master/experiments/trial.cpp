// A trial on the master. It asks for an allocation, hands its worker the
// spec, relays metrics to persistence and validations to its experiment, and
// carries out what the end of each run means. Its states, what may be asked of
// a run and the decision at a run's end are in master/experiments/trial_lifecycle.hpp, drawn
// there and tested as a table; this file keeps the facts and acts on them.

#include <csignal>
#include <optional>
#include <utility>

#include "auth/credentials.hpp"
#include "auth/untrusted_names.hpp"
#include "master/scheduling/container_exit.hpp"
#include "master/spawn.hpp"
#include "node/state_text.hpp"
#include "master/experiments/trial_lifecycle.hpp"
#include "caf/all.hpp"
#include "config/experiment_config.hpp"
#include "messages/caf_types.hpp"
#include "messages/length_unit.hpp"
#include "messages/states.hpp"
#include "messages/timestamp.hpp"
#include "tensorboard/trial_event_file.hpp"
#include "model/ids.hpp"

namespace det {
namespace {

struct trial_state {
  static inline const char* name = "trial";
  trial_setup setup;
  // What decide() looks at, kept here as the events arrive; facts() adds what the setup and the
  // trial's row already hold.
  trial_facts lifecycle;
  allocation_actor allocation;  // the current run's, while it has one
  int32_t runs = 0;
  int32_t hello_run = 0;  // the run whose worker said hello last
  std::string token;  // the current run's allocation token (Core API calls carry it)
  run_gate_actor gate;  // its workers' endpoint, which passes on what carries `token`
  double reported_progress = 0;  // a Core API process's own progress through its operation
  // The steps of the trial's latest checkpoint, when it was recorded since this actor started.
  std::optional<int64_t> latest_checkpoint_steps;
  // The highest step stored for "training" and "validation": a run that resumed from a
  // checkpoint reports the steps after it again, and those already stored are dropped.
  std::map<std::string, int64_t> stored_steps;
  // The highest step sent to storage and not yet answered: a copy of a report still on its way
  // (a worker that timed out and sent it again) is dropped too.
  std::map<std::string, int64_t> sending_steps;
  // The current run's rendezvous keys: the workers of a run on several agents find each other here.
  std::map<std::string, std::string> rendezvous;
  // A Core API trial's TensorBoard events, which the master writes since its reports come here
  // rather than through a worker's reporter: the file of run `events_run` (none if it failed).
  std::unique_ptr<tensorboard::event_file_writer> events;
  int32_t events_run = 0;
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

// The current run's token, which its Core API calls and its workers' messages must carry: the
// gate passes on only what carries it.
void set_token(self_ptr self, std::string token) {
  self->state.token = std::move(token);
  self->send(self->state.gate, update_atom::value, self->state.token);
}

// The allocation id of the trial's current (latest) run.
std::string run_id(self_ptr self) {
  return allocation_id::of(trial_id{trial(self).id()}, self->state.runs).str();
}

// Spawns the allocation of the current run, `reclaim`ing a container that already runs it or
// asking for slots to launch one.
void spawn_run(self_ptr self, bool reclaim) {
  auto& st = self->state;
  begin_run(st.lifecycle);
  st.rendezvous.clear();
  pb::StartContainer worker;
  worker.set_trial_id(trial(self).id());
  worker.set_experiment_id(trial(self).experiment_id());
  worker.set_allocation_token(trial(self).allocation_token());
  *worker.mutable_environment() = st.setup.environment;
  worker.set_runtime(st.setup.runtime);
  worker.mutable_task_user()->set_owner_id(st.setup.owner_id);
  const allocation_ask ask{run_id(self), job_id::of(experiment_id{trial(self).experiment_id()}).str(), st.setup.slots_per_trial,
                           false, true};  // a run spans agents with one worker on each
  st.allocation = spawn_allocation(self->system(), ask, worker, allocation_listener{self},
                                   st.setup.handles.pool(st.setup.resource_pool), reclaim, st.setup.handles.accounts,
                                   st.setup.handles.task_uid_base);
  self->send(st.setup.directory, register_atom::value, std::string{"allocation"}, run_id(self),
             caf::actor_cast<caf::actor>(st.allocation));
}

void start_run(self_ptr self) {
  auto& st = self->state;
  trial(self).set_runs(++st.runs);  // stored with the QUEUED state below, as is the token
  if (st.runs > 1 && !trial(self).latest_checkpoint_uuid().empty())
    log_line(self, "run " + std::to_string(st.runs) + " continues from checkpoint " +
                       trial(self).latest_checkpoint_uuid());
  set_token(self, auth::random_secret());
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
  set_token(self, trial(self).allocation_token());
  spawn_run(self, true);
}

// How far a report says the trial trained, in the unit the searcher set.
int64_t length_in(config::length_unit unit, const pb::MetricReport& r) {
  switch (unit) {
    case config::length_unit::records: return r.total_records();
    case config::length_unit::epochs: return static_cast<int64_t>(r.total_epochs() + 1e-9);
    case config::length_unit::batches: break;
  }
  return r.total_batches();
}

void end(self_ptr self, pb::State final_state, const std::string& reason) {
  auto& t = trial(self);
  t.set_exit_reason(reason);
  *t.mutable_end_time() = det::now();
  const auto& r = self->state.lifecycle.report;
  t.set_outcome(r ? r->outcome : pb::WORKER_OUTCOME_UNSPECIFIED);
  set_state(self, final_state);
  caf::anon_send(self->state.setup.experiment, exited_atom::value, t.request_id(), final_state,
                 r ? r->outcome : pb::WORKER_OUTCOME_UNSPECIFIED);
  self->quit();
}

// At its length with no run: the searcher decides what follows.
bool waiting_for_searcher(self_ptr self) {
  return trial(self).state() == pb::STATE_ACTIVE;
}

trial_facts facts(self_ptr self) {
  auto f = self->state.lifecycle;
  f.waits_at_length = self->state.setup.waits_at_length;
  f.restarts = trial(self).restarts();
  f.max_restarts = self->state.setup.max_restarts;
  f.latest_checkpoint = trial(self).latest_checkpoint_uuid();
  return f;
}

// While a run is being stopped, the trial shows how it will end (STOPPING_*).
void show_stopping(self_ptr self) {
  if (!self->state.allocation)
    return;
  auto shown = stopping_state(facts(self));
  if (shown && *shown != trial(self).state())
    set_state(self, *shown);
}

// Raises what is asked of the current run to `wanted` and signals the run when that is more than
// it was asked before.
void ask(self_ptr self, stop_intent wanted) {
  auto& st = self->state;
  const auto before = st.lifecycle.intent;
  st.lifecycle.intent = raise(before, wanted);
  show_stopping(self);
  if (!st.allocation || st.lifecycle.intent == before)
    return;
  if (st.lifecycle.intent == stop_intent::kill)
    self->send(st.allocation, kill_atom::value, int32_t{SIGKILL});
  else if (before != stop_intent::none)
    return;  // already stopping gracefully
  else if (st.lifecycle.intent == stop_intent::preempt)  // the agent sends SIGKILL after preemption_timeout
    self->send(st.allocation, kill_atom::value, int32_t{SIGTERM}, st.setup.preemption_timeout_s);
  else
    self->send(st.allocation, kill_atom::value, int32_t{SIGTERM});
}

void on_container_exit(self_ptr self, const pb::ContainerExited& e) {
  auto& st = self->state;
  st.allocation = nullptr;
  set_token(self, "");  // calls from the run that ended are refused
  auto d = decide(facts(self), e);
  for (const auto& note : d.notes)
    log_line(self, note);
  if (d.counts_restart)
    trial(self).set_restarts(trial(self).restarts() + 1);
  switch (d.step) {
    case trial_step::end:
      end(self, d.end_state, d.reason);
      return;
    case trial_step::restart:
    case trial_step::requeue:
      start_run(self);
      return;
    case trial_step::pause:
      set_state(self, pb::STATE_PAUSED);
      return;
    case trial_step::wait:
      set_state(self, pb::STATE_ACTIVE);
      return;
  }
}

// Metrics from the worker or a Core API process, once stored: the trial's latest values, and
// validations of the searcher metric for the experiment.
void take_metrics(self_ptr self, const pb::MetricBatch& batch) {
  auto& st = self->state;
  auto& t = trial(self);
  for (const auto& r : batch.reports()) {
    t.set_total_batches(std::max(t.total_batches(), r.total_batches()));
    st.lifecycle.trained = std::max(st.lifecycle.trained, length_in(st.lifecycle.unit, r));
    // Only the built-in groups are the trial's latest values: a generic group's names (Core API
    // report_metrics) would otherwise pass for training metrics.
    auto* latest = r.group() == "validation" ? t.mutable_latest_validation()
                   : r.group() == "training" ? t.mutable_latest_training()
                                             : nullptr;
    if (latest)
      for (auto& [k, v] : r.metrics())
        (*latest)[k] = v;
    if (r.group() == "validation") {
      auto it = r.metrics().find(st.setup.searcher_metric);
      if (it != r.metrics().end())
        caf::anon_send(st.setup.experiment, validated_atom::value, t.request_id(), it->second,
                       length_in(st.lifecycle.unit, r));
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
            done(make_error(errc::storage_failed, "the metrics were not stored: " +
                                                              error_sentence(self->system(), e)));
          });
}

// Why a checkpoint a trial reports cannot be recorded as it names itself: its uuid becomes a
// directory and its files' names paths under the checkpoint storage, which the master later opens.
std::optional<std::string> misnamed(const pb::Checkpoint& c) {
  if (!auth::is_uuid(c.uuid()))
    return "a checkpoint's uuid is the name of its directory under DET_CHECKPOINT_DIR, a UUID such as "
           "0b7c2a34-8d0e-4f4e-9a0b-6c1d2e3f4a5b; got \"" + c.uuid().substr(0, 64) + "\"";
  for (const auto& [name, size] : c.resources())
    if (!auth::is_plain_relative_path(name))
      return "checkpoint " + c.uuid() + " names a file \"" + name.substr(0, 256) +
             "\": a checkpoint's files are plain paths relative to its directory (no \"..\", no leading \"/\")";
  return std::nullopt;
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
  auto length = length_in(self->state.lifecycle.unit, at);
  auto uuid = c.uuid();
  auto steps = c.steps_completed();
  self->request(self->state.setup.handles.rows, std::chrono::seconds(30), std::move(c))
      .then(
          [=](bool recorded) mutable {
            if (recorded) {
              trial(self).set_latest_checkpoint_uuid(uuid);
              self->state.latest_checkpoint_steps = steps;
              caf::anon_send(self->state.setup.experiment, checkpointed_atom::value, trial(self).request_id(), uuid,
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

// Whether the current run is being stopped: a Core API process's preemption check.
bool should_stop(self_ptr self) {
  return self->state.lifecycle.intent != stop_intent::none || self->state.lifecycle.searcher_closed;
}

// What a Core API process's early exit reports, or nullopt for a name det does not know.
std::optional<worker_report> early_exit(const std::string& reason) {
  if (reason == "INVALID_HP")
    return worker_report{pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS, ""};
  if (reason == "USER_CANCELED")
    return worker_report{pb::WORKER_OUTCOME_USER_CANCELED, ""};
  if (reason == "ERRORED")
    return worker_report{pb::WORKER_OUTCOME_ERRORED, "the trial exited early: ERRORED"};
  return std::nullopt;
}

// A Core API process's call: it must carry the token of the trial's current run.
// One stored Core API report into the run's event file, as the harness's chief worker writes
// its own: training/<name> and validation/<name> at step = batches.
void write_events(self_ptr self, const pb::MetricReport& r) {
  auto& st = self->state;
  if (!deduplicated(r.group())) return;
  if (st.events_run != st.runs) {
    st.events_run = st.runs;
    const auto& t = trial(self);
    try {
      st.events = tensorboard::open_trial_event_file_beneath(
          st.setup.checkpoint_root, config::tensorboard_subdir(t.experiment_id(), t.id()), t.hparams());
    } catch (const std::exception& e) {
      st.events.reset();
      log_line(self, std::string("writing no TensorBoard event files: ") + e.what());
    }
  }
  if (!st.events) return;
  std::map<std::string, double> metrics(r.metrics().begin(), r.metrics().end());
  metrics.erase("batches");
  metrics.erase("epochs");
  try {
    st.events->write_scalars(r.group(), r.total_batches(), tensorboard::wall_time_now(), metrics);
    st.events->flush();  // Core API reports are rare, and a run may idle after its last one
  } catch (const std::exception& e) {
    st.events.reset();
    log_line(self, std::string("no more TensorBoard events: ") + e.what());
  }
}

constexpr std::size_t max_metric_group_bytes = 255;

caf::result<pb::CoreApiReply> core_api(self_ptr self, pb::CoreApiCall& call) {
  auto& st = self->state;
  auto id = std::to_string(trial(self).id());
  if (!auth::same_secret(call.token(), st.token))
    return make_error(errc::forbidden, "the allocation token does not belong to the current run of trial " + id);
  pb::CoreApiReply reply;
  switch (call.call_case()) {
    case pb::CoreApiCall::kMetrics: {
      // A group names a chart of the trial's page and a query parameter: any text, bounded.
      if (call.metrics().group().empty() || call.metrics().group().size() > max_metric_group_bytes)
        return make_error(errc::invalid_input, "a metric group's name has 1 to " +
                                                   std::to_string(max_metric_group_bytes) + " bytes");
      pb::MetricBatch batch;
      *batch.add_reports() = call.metrics();
      auto rp = self->make_response_promise<pb::CoreApiReply>();
      store_metrics(self, std::move(batch), [self, rp, report = std::move(*call.mutable_metrics())](caf::expected<int64_t> stored) mutable {
        if (stored && *stored > 0) write_events(self, report);  // 0: a report stored before
        if (stored)
          rp.deliver(pb::CoreApiReply{});
        else
          rp.deliver(make_error(errc::storage_failed, "the master could not store the metrics; report them again"));
      });
      return rp;
    }
    case pb::CoreApiCall::kCheckpoint: {
      if (auto wrong = misnamed(call.checkpoint())) return make_error(errc::invalid_input, *wrong);
      auto promise = self->make_response_promise<pb::CoreApiReply>();
      record_checkpoint(self, std::move(*call.mutable_checkpoint()), [promise](bool recorded) mutable {
        if (recorded)
          promise.deliver(pb::CoreApiReply{});
        else
          promise.deliver(make_error(errc::storage_failed, "the master could not record the checkpoint"));
      });
      return promise;
    }
    case pb::CoreApiCall::kSearcherOperation:
      if (st.setup.trains_until_exit) {  // one operation without a length, until the process exits
        reply.set_no_length(true);
        reply.set_completed(st.lifecycle.searcher_closed);
        return reply;
      }
      reply.set_length(st.lifecycle.length);
      reply.set_unit(to_proto(st.lifecycle.unit));
      reply.set_completed(st.lifecycle.searcher_closed || st.lifecycle.trained >= st.lifecycle.length);
      return reply;
    case pb::CoreApiCall::kProgress:
      if (!(call.progress() >= 0 && call.progress() <= 1))  // NaN too
        return make_error(errc::invalid_input, "progress is a share of the searcher operation, from 0 to 1");
      st.reported_progress = call.progress();
      caf::anon_send(st.setup.experiment, progress_atom::value, trial(self).request_id(), call.progress());
      return reply;
    case pb::CoreApiCall::kCompletedLength:
      if (st.setup.trains_until_exit) {  // nothing to check: the process decided its length
        reply.set_completed(true);
        return reply;
      }
      // The searcher reads its metric from the validations; completing is only checked.
      if (call.completed_length() > st.lifecycle.trained || call.completed_length() != st.lifecycle.length)
        return make_error(errc::invalid_input,
                          "trial " + id + " was asked to train to " + std::to_string(st.lifecycle.length) + " " +
                              config::to_string(st.lifecycle.unit) + " and reported validations up to " +
                              std::to_string(st.lifecycle.trained) + "; report validation metrics there before completing the operation");
      reply.set_completed(true);
      return reply;
    case pb::CoreApiCall::kPreemption:
      reply.set_preempt(should_stop(self));
      return reply;
    case pb::CoreApiCall::kEarlyExit: {
      auto report = early_exit(call.early_exit());
      if (!report)
        return make_error(errc::invalid_input, "an early exit's reason is INVALID_HP, ERRORED or USER_CANCELED, not \"" +
                                                   call.early_exit() + "\"");
      record_report(st.lifecycle, std::move(*report), true);  // the process is the run's only worker
      show_stopping(self);
      return reply;
    }
    default:
      return make_error(errc::invalid_input, "the call names nothing to do");
  }
}

// The error a message from a run that is over gets: it must not count.
caf::error stale(self_ptr self, const std::string& allocation_id, const std::string& consequence = "") {
  return make_error(errc::stale_run, "allocation " + allocation_id + " is not the current run of trial " +
                                         std::to_string(trial(self).id()) + consequence);
}

// The length the searcher asks it to train to.
void take_length(self_ptr self, const config::length& length) {
  self->state.lifecycle.unit = length.unit;
  self->state.lifecycle.length = length.value;
  if (length.unit == config::length_unit::batches)
    trial(self).set_target_batches(length.value);
}

trial_actor::behavior_type trial_impl(self_ptr self, trial_setup setup) {
  self->state.setup = std::move(setup);
  // Registered by the trial itself, before it asks for slots: its worker's hello, which looks it up
  // in the directory, comes after that ask. Registered by its experiment after the spawn, a trial
  // that a busy machine ran first was not yet there for 1 worker in 2,000.
  self->send(self->state.setup.directory, register_atom::value, trial_id{self->state.setup.trial.id()},
             caf::actor_cast<trial_actor>(self));
  if (self->state.setup.train_to.value > 0)
    take_length(self, self->state.setup.train_to);
  if (self->state.setup.stop)
    self->send(self, stop_atom::value, *self->state.setup.stop);
  self->state.gate = spawn_run_gate(self->system(), caf::actor_cast<trial_actor>(self));
  self->state.runs = trial(self).runs();  // a restored trial numbers its runs on from the stored ones
  if (trial(self).stored_training_step() >= 0 && trial(self).runs() > 0)
    self->state.stored_steps["training"] = trial(self).stored_training_step();
  if (trial(self).stored_validation_step() >= 0 && trial(self).runs() > 0)
    self->state.stored_steps["validation"] = trial(self).stored_validation_step();
  self->state.sending_steps = self->state.stored_steps;
  *trial(self).mutable_start_time() = det::now();
  if (!self->state.setup.start_note.empty())
    log_line(self, self->state.setup.start_note);
  self->state.lifecycle.experiment_paused = self->state.setup.start_paused;
  const auto stored = self->state.setup.trial.state();
  const bool had_run = self->state.runs > 0 && !trial(self).allocation_token().empty();
  if (is_stopping(stored)) {
    // Restored while a stop was under way: take the run back if there is one, then finish the stop.
    if (had_run)
      reclaim_run(self);
    if (stored == pb::STATE_STOPPING_COMPLETED) {
      self->send(self, stop_atom::value, trial(self).searcher_stopped());
    } else if (stored == pb::STATE_STOPPING_CANCELED && had_run) {  // its process canceled itself
      record_report(self->state.lifecycle, worker_report{pb::WORKER_OUTCOME_USER_CANCELED, ""}, true);
    } else {
      self->send(self, kill_atom::value);
    }
  } else if (self->state.setup.start_waiting) {
    set_state(self, pb::STATE_ACTIVE);
  } else if (self->state.setup.start_paused) {
    set_state(self, pb::STATE_PAUSED);
  } else {
    if ((stored == pb::STATE_RUNNING || stored == pb::STATE_STARTING) && had_run) {
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
          return stale(self, hello.allocation_id());
        if (!auth::same_secret(hello.allocation_token(), st.token))
          return make_error(errc::refused, "the worker's allocation token is not the one of run " + run_id(self) +
                                               " of trial " + std::to_string(trial(self).id()));
        pb::TrialSpec spec;
        spec.set_trial_id(trial(self).id());
        spec.set_experiment_id(trial(self).experiment_id());
        spec.set_config(st.setup.config);
        spec.set_hparams(trial(self).hparams());
        spec.set_seed(trial(self).seed());
        spec.set_validate_after_unit(to_proto(st.lifecycle.unit));
        // The run's first hello fixes its length: the other workers of a run on several agents
        // must train to the same one, and a worker saying hello again after a reconnection
        // trains to what it was first given.
        if (std::exchange(st.hello_run, st.runs) != st.runs)
          st.lifecycle.run_length = st.lifecycle.length;
        spec.set_validate_after_length(st.lifecycle.run_length);
        spec.set_checkpoint_root(st.setup.checkpoint_root);
        spec.set_allocation_token(st.token);
        spec.set_reconnect_wait_s(st.setup.handles.agent_reconnect_wait_s);
        if (st.setup.model_definition)
          spec.set_model_definition(*st.setup.model_definition);
        const auto& latest = trial(self).latest_checkpoint_uuid();
        if (!latest.empty()) {
          spec.set_resume_checkpoint_dir(st.setup.checkpoint_root + "/" + latest);
          if (st.latest_checkpoint_steps)
            spec.set_steps_completed(*st.latest_checkpoint_steps);
        }
        if (trial(self).latest_checkpoint_uuid().empty()) {
          if (st.setup.warm_start_resumes)
            spec.set_resume_checkpoint_dir(st.setup.warm_start_dir);  // det trial continue: its steps too
          else
            spec.set_warm_start_checkpoint_dir(st.setup.warm_start_dir);
        }
        if (st.allocation)
          spec.set_allocation_id(run_id(self));
        if (trial(self).state() == pb::STATE_QUEUED || trial(self).state() == pb::STATE_STARTING)
          set_state(self, pb::STATE_RUNNING);
        return {spec, caf::actor_cast<trial_endpoint>(st.gate)};
      },
      [=](pb::MetricBatch& batch) -> caf::result<int64_t> {
        if (from_stale_run(self, batch.allocation_id()))
          return stale(self, batch.allocation_id(), ": stop training");
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
        if (auto wrong = misnamed(c)) return make_error(errc::invalid_input, *wrong);
        auto promise = self->make_response_promise<bool>();
        record_checkpoint(self, std::move(c), [promise](bool recorded) mutable { promise.deliver(recorded); });
        return promise;
      },
      [=](pb::CoreApiCall& call) -> caf::result<pb::CoreApiReply> { return core_api(self, call); },
      [=](pb::Rendezvous& r) -> caf::result<pb::Rendezvous> {
        if (from_stale_run(self, r.allocation_id()))
          return stale(self, r.allocation_id());
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
        worker_report report{e.outcome(), e.message()};
        if (e.rank() > 0) {  // another worker of a distributed run: only its failure is news
          if (report.outcome == pb::WORKER_OUTCOME_COMPLETED || report.outcome == pb::WORKER_OUTCOME_STOPPED)
            return true;
          report.message = "worker " + std::to_string(e.rank()) + ": " + report.message;
        }
        record_report(self->state.lifecycle, std::move(report), e.rank() == 0);
        return true;
      },
      [=](launch_atom, const std::vector<std::string>& agents) {
        std::string where;
        for (const auto& a : agents) where += (where.empty() ? "" : ", ") + a;
        log_line(self, "run " + run_id(self) + " placed on " + where);
      },
      [=](pb::ContainerStarted& started) {
        log_line(self, "container started on allocation " + started.allocation_id() + " (pid " +
                           std::to_string(started.pid()) + ")");
        if (trial(self).state() == pb::STATE_QUEUED)  // the worker's hello may come first
          set_state(self, pb::STATE_STARTING);
      },
      [=](pb::ContainerExited& e) { on_container_exit(self, e); },
      [=](const pb::ContainerActivity&) {},  // a trial's workers serve nothing and report no use
      [=](train_to_atom, const config::length& length) {
        auto& st = self->state;
        take_length(self, length);
        if (waiting_for_searcher(self) && length.value > st.lifecycle.run_length) {  // promoted, or its next PBT round
          if (st.lifecycle.experiment_paused)
            set_state(self, pb::STATE_PAUSED);
          else
            start_run(self);
        }
      },
      [=](rung_atom, int32_t rung) {
        trial(self).set_rung(rung);
        self->send(self->state.setup.handles.persistence, update_atom::value, trial(self));
      },
      [=](stop_atom, bool early) {
        auto& st = self->state;
        st.lifecycle.searcher_closed = true;
        if (early)
          trial(self).set_searcher_stopped(true);
        if (!st.allocation) {  // waiting for the searcher or paused: nothing to stop
          end(self, pb::STATE_COMPLETED, "");
          return;
        }
        ask(self, stop_intent::searcher_stop);
      },
      [=](pause_atom) {
        self->state.lifecycle.experiment_paused = true;
        ask(self, stop_intent::pause);
      },
      [=](activate_atom) {
        // A pause still under way runs the trial again once its run has stopped (see decide).
        self->state.lifecycle.experiment_paused = false;
        if (trial(self).state() == pb::STATE_PAUSED)
          start_run(self);
      },
      [=](preempt_atom) {
        auto& st = self->state;
        if (!st.allocation || st.lifecycle.intent != stop_intent::none)
          return;
        log_line(self, "preempted by the scheduler: checkpointing and giving its slots back");
        ask(self, stop_intent::preempt);
      },
      [=](kill_atom) {
        if (self->state.allocation)
          ask(self, stop_intent::kill);
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
            .add("train to", std::to_string(st.lifecycle.length) + " " + config::to_string(st.lifecycle.unit))
            .add("batches trained", t.total_batches())
            .add("restarts", std::to_string(t.restarts()) + " of " +
                                 std::to_string(st.setup.max_restarts))
            .add("runs", st.runs)
            .add("reported progress", st.reported_progress)
            .add("asked of the run", to_string(st.lifecycle.intent))
            .add("closed by the searcher", st.lifecycle.searcher_closed ? "yes" : "no")
            .add("experiment paused", st.lifecycle.experiment_paused ? "yes" : "no")
            .add("worker reported", st.lifecycle.report ? pb::WorkerOutcome_Name(st.lifecycle.report->outcome) : "nothing yet");
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
