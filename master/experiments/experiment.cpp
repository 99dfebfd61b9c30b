// An experiment: tells its searcher (an actor of its own, master/experiments/searcher.cpp) what happened to
// its trials and carries out the actions it answers with (create, validate-after, stop, shutdown).
// Until the search starts the experiment holds it itself: a restore reads and replays it here,
// then hands it over.
//
//   ACTIVE --(searcher shutdown)--> COMPLETED | CANCELED | ERROR
//     |
//     +--(kill)--> STOPPING_KILLED --(every trial exited)--> CANCELED

#include <map>
#include <optional>
#include <utility>
#include <variant>

#include "messages/timestamp.hpp"
#include "messages/states.hpp"

#include "node/run_environment.hpp"
#include "master/spawn.hpp"
#include "storage/shared_checkpoint_root.hpp"
#include "node/state_text.hpp"
#include "caf/all.hpp"
#include "config/experiment_config.hpp"
#include "messages/errc.hpp"
#include "messages/searcher.pb.h"
#include "searcher/custom_search.hpp"
#include "searcher/searcher.hpp"
#include "node/log.hpp"
#include "model/ids.hpp"

namespace det {
namespace {

constexpr auto db_timeout = std::chrono::seconds(30);

struct trial_entry {
  int64_t trial_id = 0;
  trial_actor handle;
  bool exited = false;
  pb::State final_state = pb::STATE_UNSPECIFIED;
  config::length target;  // what the searcher last asked it to train to; 0 before it asked
  int32_t rung = -1;  // as last told to the trial
  std::string latest_checkpoint;
  int64_t checkpoint_length = -1;  // how far it had trained at latest_checkpoint
  int64_t validated_length = 0;    // how far it had trained at its last validation
  // PBT copies of this trial, created once it has checkpointed what it validated.
  std::vector<searcher::create_action> waiting_copies;
  // A stop the search sent before the trial's actor existed (whether early), sent once it does.
  std::optional<bool> stop_before_start;
};

struct experiment_state {
  static inline const char* name = "experiment";
  pb::Experiment exp;
  config::experiment_config cfg;
  // The search until start_search hands it to `searcher`.
  std::shared_ptr<searcher::searcher> unstarted_search;
  searcher_actor searcher;
  bool custom_search = false;  // searcher.name = "custom": a user's process drives it
  bool trials_wait_at_length = false;
  // What the search said of each request in its latest step that named it (rung, target).
  std::map<int64_t, request_view> search_view;
  double progress = 0;
  std::string snapshot;  // the search's latest, serialized
  std::vector<pb::SearcherEvent> custom_events;  // custom: unacknowledged, as of the latest step
  std::vector<pb::SearcherEvent> readable_events;  // custom: those of the latest snapshot committed
  std::map<int64_t, trial_entry> trials;  // by request id
  master_handles handles;
  directory_actor directory;
  std::optional<std::vector<pb::Trial>> restored_trials;  // until the restore has run
  bool search_from_start = false;  // restored without a snapshot
  // Rows stored before the search asked for them: after the snapshot it was restored from (it
  // asks for them again, being deterministic), or with a new experiment (its first actions).
  // create_trial adopts them instead of storing them again.
  std::map<int64_t, pb::Trial> unclaimed_rows;  // by request id
  std::shared_ptr<const std::string> model_definition;
  std::string warm_start_uuid;  // searcher.source_*: every trial starts from it
  std::string warm_start_dir;
  std::optional<std::vector<searcher::action>> first_actions;  // see experiment_plan
  bool started = false;  // the search has begun (or been restored)
  // custom searcher: posted operations, answered once the snapshot that holds them is committed
  std::vector<caf::typed_response_promise<bool>> posts_waiting;
  // Requests to the searcher not yet answered: a killed experiment ends, and any ends its actor,
  // only once each is, so that no step is lost and every post gets its answer.
  int steps_in_flight = 0;
  bool quit_when_answered = false;
};

using self_ptr = experiment_actor::stateful_pointer<experiment_state>;

// Killed, with its trials still stopping (a terminal state ends the actor).
bool killed(self_ptr self) {
  return self->state.exp.state() == pb::STATE_STOPPING_KILLED;
}

bool paused(self_ptr self) {
  return self->state.exp.state() == pb::STATE_PAUSED;
}

void process(self_ptr self, search_step step);

// Ends the actor, once the searcher has answered every request in flight.
void quit_when_answered(self_ptr self) {
  if (self->state.steps_in_flight == 0)
    self->quit();
  else
    self->state.quit_when_answered = true;
}

// Counts a request to the searcher answered. False when the experiment ended meanwhile: the
// step is moot (and the actor ends once the last one is answered).
bool step_answered(self_ptr self) {
  auto& st = self->state;
  --st.steps_in_flight;
  if (!is_terminal(st.exp.state()))
    return true;
  if (st.quit_when_answered && st.steps_in_flight == 0)
    self->quit();
  return false;
}
void save_snapshot(self_ptr self);

void set_state(self_ptr self, pb::State s) {
  self->state.exp.set_state(s);
  self->send(self->state.handles.persistence, update_atom::value, self->state.exp);
}

// Where the experiment's checkpoints go: checkpoint_storage's host_path and
// storage_path, or the master's default directory.
std::string checkpoint_root(self_ptr self) {
  return self->state.cfg.checkpoint_storage.root(self->state.handles.default_checkpoint_root);
}

// The job's settings as the pool schedules by them: the config's, unless changed since.
job_settings scheduling(self_ptr self) {
  const auto& resources = self->state.cfg.resources;
  const auto& changed = self->state.exp.scheduling();
  job_settings s;
  s.priority = changed.has_priority() ? changed.priority() : resources.priority.value_or(0);
  s.weight = changed.has_weight() ? changed.weight() : resources.weight;
  s.max_slots = changed.has_max_slots() ? changed.max_slots() : resources.max_slots.value_or(0);
  return s;
}

resource_pool_actor pool(self_ptr self) {
  const auto& resources = self->state.cfg.resources;
  return self->state.handles.pool(resources.resource_pool, resources.slots_per_trial);
}

// What the pool schedules the experiment's trials under.
std::string job_of(self_ptr self) { return job_id::of(experiment_id{self->state.exp.id()}).str(); }

void finish(self_ptr self, pb::State final_state) {
  for (auto& [rid, t] : self->state.unclaimed_rows) {
    t.set_state(pb::STATE_ERROR);
    t.set_exit_reason("the master stopped before the searcher recorded this trial");
    self->send(self->state.handles.persistence, update_atom::value, t);
  }
  self->state.unclaimed_rows.clear();
  *self->state.exp.mutable_end_time() = det::now();
  set_state(self, final_state);
  self->send(self->state.handles.collector, gc_atom::value, experiment_id{self->state.exp.id()},
             self->state.exp.config());
  self->send(pool(self), remove_atom::value, job_of(self));
  if (self->state.custom_search) {
    save_snapshot(self);  // its process's last operations are answered once committed; quits then
    return;
  }
  quit_when_answered(self);
}

bool all_trials_exited(self_ptr self) {
  for (auto& [rid, t] : self->state.trials)
    if (!t.exited)
      return false;
  return true;
}

// What a custom searcher's process reads: its unacknowledged events as last committed, then,
// once the experiment has ended, one saying so.
pb::GetSearcherEventsResponse searcher_events(self_ptr self) {
  pb::GetSearcherEventsResponse events;
  const auto& unacknowledged = self->state.readable_events;
  for (const auto& e : unacknowledged) *events.add_searcher_events() = e;
  if (is_terminal(self->state.exp.state())) {
    auto& inactive = *events.add_searcher_events();
    inactive.set_id(unacknowledged.empty() ? 0 : unacknowledged.back().id());
    inactive.mutable_experiment_inactive()->set_experiment_state(self->state.exp.state());
  }
  return events;
}

// Spawns the actor of a trial whose row exists, with what the searcher said
// about its length so far.
void start_trial(self_ptr self, const pb::Trial& t, std::string note = {}, bool waiting = false) {
  auto& st = self->state;
  auto& entry = st.trials[t.request_id()];
  trial_setup setup;
  setup.waits_at_length = st.trials_wait_at_length;
  setup.trains_until_exit = st.cfg.searcher.trains_until_exit();
  setup.start_waiting = waiting;
  setup.start_note = std::move(note);
  setup.checkpoint_root = checkpoint_root(self);
  // Its workers run as its owner's Unix user, who must be able to write there.
  if (auto why = storage::prepare_shared_checkpoint_root(setup.checkpoint_root); !why.empty())
    logs::warn(logs::component::experiment, "experiment " + std::to_string(st.exp.id()) + ": " + why);
  setup.owner_id = st.exp.owner_id();
  setup.model_definition = st.model_definition;
  const auto& warm = t.warm_start_checkpoint_uuid();
  if (!warm.empty()) {
    setup.warm_start_dir = warm == st.warm_start_uuid && !st.warm_start_dir.empty() ? st.warm_start_dir
                                                                                   : setup.checkpoint_root + "/" + warm;
    setup.warm_start_resumes = warm == st.warm_start_uuid && st.cfg.searcher.source_resumes;
  }
  setup.trial = t;
  setup.config = st.exp.config();
  setup.searcher_metric = st.cfg.searcher.metric;
  setup.slots_per_trial = st.cfg.resources.slots_per_trial;
  setup.resource_pool = st.handles.pool_name(st.cfg.resources.resource_pool, st.cfg.resources.slots_per_trial);
  setup.max_restarts = st.cfg.max_restarts;
  setup.environment = run_environment_of(st.cfg.environment);
  setup.runtime = st.cfg.trains_with_libtorch() ? pb::WORKER_RUNTIME_LIBTORCH : pb::WORKER_RUNTIME_OTHER;
  setup.preemption_timeout_s = st.cfg.preemption_timeout_s;
  setup.start_paused = paused(self);
  setup.experiment = trial_listener{self};
  setup.handles = st.handles;
  setup.directory = st.directory;
  setup.train_to = entry.target;
  setup.stop = entry.stop_before_start;
  entry.trial_id = t.id();
  entry.handle = spawn_trial(self->system(), std::move(setup));  // it registers itself in the directory
}

// Tells the trial its rung when the search moved it.
void sync_rung(self_ptr self, int64_t request_id, int64_t rung) {
  auto it = self->state.trials.find(request_id);
  if (rung < 0 || it == self->state.trials.end() || !it->second.handle || it->second.exited ||
      it->second.rung == rung)
    return;
  it->second.rung = static_cast<int32_t>(rung);
  self->send(it->second.handle, rung_atom::value, static_cast<int32_t>(rung));
}

// Tells the search `events`, one decision, and carries out what it answers. Steps are answered in
// the order they were asked.
void ask(self_ptr self, std::vector<search_event> events) {
  ++self->state.steps_in_flight;
  self->request(self->state.searcher, caf::infinite, search_request{std::move(events)})
      .then([=](search_step& step) {
        if (step_answered(self))
          process(self, std::move(step));
      });
}

// Killed, with every trial exited and the search told of each: it ends CANCELED.
void finish_if_killed_and_done(self_ptr self) {
  if (killed(self) && all_trials_exited(self) && self->state.steps_in_flight == 0)
    finish(self, pb::STATE_CANCELED);
}

// How a trial that ended is told to the search: why it ended early, if it did, then its close.
std::vector<search_event> exit_events(int64_t request_id, pb::State final_state, bool invalid_hparams) {
  using namespace search_events;
  std::vector<search_event> events;
  if (invalid_hparams)
    events.push_back(trial_exited_early{request_id, searcher::exit_reason::invalid_hp});
  else if (final_state == pb::STATE_CANCELED)
    events.push_back(trial_exited_early{request_id, searcher::exit_reason::user_canceled});
  else if (final_state != pb::STATE_COMPLETED)
    events.push_back(trial_exited_early{request_id, searcher::exit_reason::errored});
  events.push_back(trial_exited{request_id});
  return events;
}

// How a stored trial ended, as the live trial would have told the search.
std::vector<search_event> replayed_exit(const pb::Trial& t) {
  const bool invalid = t.outcome() == pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS;
  return exit_events(t.request_id(), t.state(), invalid && t.state() != pb::STATE_COMPLETED);
}

// A trial that could not even be created counts as failed.
void close_failed(self_ptr self, int64_t request_id) {
  ask(self, exit_events(request_id, pb::STATE_ERROR, false));
}

void create_trial(self_ptr self, const searcher::create_action& c);

// A PBT copy starts from its parent's checkpoint of the round just ended; the
// parent saves it right after the validation that ended the round.
bool waits_for_parent_checkpoint(self_ptr self, const searcher::create_action& c) {
  if (c.parent_request_id == 0)
    return false;
  auto parent = self->state.trials.find(c.parent_request_id);
  if (parent == self->state.trials.end() || parent->second.exited ||
      parent->second.checkpoint_length >= parent->second.validated_length)
    return false;
  parent->second.waiting_copies.push_back(c);
  return true;
}

void create_waiting_copies(self_ptr self, trial_entry& parent) {
  auto copies = std::move(parent.waiting_copies);
  parent.waiting_copies.clear();
  if (killed(self))
    return;
  for (auto& c : copies)
    create_trial(self, c);
}

// What a trial that starts from the searcher's warm start logs first.
std::string warm_start_note(const pb::Trial& t) {
  if (t.parent_trial_id() != 0 || t.warm_start_checkpoint_uuid().empty())
    return {};
  return "it starts from the weights of checkpoint " + t.warm_start_checkpoint_uuid() + " (the searcher's warm start)";
}

// A new trial of a search whose trials wait at each length, before the search gave it one (a
// custom search's process answers its creation later): it waits too, holding no slots.
bool waits_for_length(self_ptr self, int64_t request_id) {
  const auto& st = self->state;
  auto view = st.search_view.find(request_id);
  return st.trials_wait_at_length && (view == st.search_view.end() || !view->second.training_target);
}

// A stored trial the experiment will not start (it was killed meanwhile) ends CANCELED, and the
// search counts it as failed.
void cancel_unstarted(self_ptr self, pb::Trial t) {
  t.set_state(pb::STATE_CANCELED);
  *t.mutable_end_time() = det::now();
  self->send(self->state.handles.persistence, update_atom::value, t);
  self->state.trials[t.request_id()].exited = true;
  close_failed(self, t.request_id());
}

// Tells the search that a stored (or adopted) trial exists and starts its actor once the search
// has answered, with the length and any stop that answer gives it: started before, its first run
// could reach its worker's hello before the search had given it a length.
void begin_trial(self_ptr self, pb::Trial t, std::string note) {
  const auto rid = t.request_id();
  ++self->state.steps_in_flight;
  self->request(self->state.searcher, caf::infinite, search_request{{search_events::trial_created{rid}}})
      .then([=](search_step& step) mutable {
        if (!step_answered(self))
          return;
        process(self, std::move(step));
        if (is_terminal(self->state.exp.state()))
          return;
        if (killed(self))  // it has no actor the kill could reach
          return cancel_unstarted(self, std::move(t));
        start_trial(self, t, std::move(note), waits_for_length(self, rid));
        if (auto view = self->state.search_view.find(rid); view != self->state.search_view.end())
          sync_rung(self, rid, view->second.rung);
      });
}

void create_trial(self_ptr self, const searcher::create_action& c) {
  auto& st = self->state;
  if (!st.unclaimed_rows.count(c.request_id) && waits_for_parent_checkpoint(self, c))
    return;
  st.trials[c.request_id] = trial_entry{};
  if (auto row = st.unclaimed_rows.find(c.request_id); row != st.unclaimed_rows.end()) {
    auto t = std::move(row->second);
    st.unclaimed_rows.erase(row);
    auto& entry = st.trials[c.request_id];
    entry.trial_id = t.id();
    entry.latest_checkpoint = t.latest_checkpoint_uuid();
    if (!is_terminal(t.state())) {
      auto note = t.runs() == 0 ? warm_start_note(t) : std::string{};
      return begin_trial(self, std::move(t), std::move(note));
    }
    entry.exited = true;
    entry.final_state = t.state();
    std::vector<search_event> events{search_events::trial_created{c.request_id}};
    auto exit = replayed_exit(t);
    events.insert(events.end(), exit.begin(), exit.end());
    ask(self, std::move(events));
    return;
  }
  pb::Trial t = new_trial_row(c, st.cfg, c.parent_request_id == 0 ? st.warm_start_uuid : std::string{});
  t.set_experiment_id(st.exp.id());
  std::string note = warm_start_note(t);
  if (c.parent_request_id != 0) {
    auto parent = st.trials.find(c.parent_request_id);
    if (parent != st.trials.end() && parent->second.trial_id != 0) {
      auto from = std::to_string(parent->second.trial_id);
      t.set_parent_trial_id(parent->second.trial_id);
      t.set_warm_start_checkpoint_uuid(parent->second.latest_checkpoint);
      note = parent->second.latest_checkpoint.empty()
                 ? "copied by PBT from trial " + from +
                       " with explored hyperparameters; that trial saved no checkpoint, so it starts from scratch"
                 : "copied by PBT from trial " + from + " with explored hyperparameters; it starts from checkpoint " +
                       parent->second.latest_checkpoint;
    }
  }
  // A slot waits for this row: the row writer, whose mailbox holds only such rows, stores it.
  self->request(st.handles.rows, db_timeout, create_atom::value, t)
      .then(
          [=](int64_t id) mutable {
            t.set_id(id);
            if (killed(self))  // the row exists: it must not stay QUEUED
              return cancel_unstarted(self, std::move(t));
            self->state.trials[c.request_id].trial_id = id;
            begin_trial(self, std::move(t), note);
          },
          [=](caf::error&) {
            self->state.trials[c.request_id].exited = true;
            close_failed(self, c.request_id);
          });
}

// After every batch of actions, so that a restarted master continues the
// search exactly where it was. Persistence keeps the latest one and writes it
// on its next flush, after the trial rows the batch created; a restore from an
// older snapshot adopts rows stored after it.
//
// A custom search's process must never see an event, or an answer to its operations, that a
// restarted master would not have: its snapshot is committed before the experiment goes on
// (await: no other message is taken meanwhile), and only then are its events readable and
// operations answered; a snapshot that could not be committed leaves the events readable as the
// last one committed had them.
void save_snapshot(self_ptr self) {
  auto& st = self->state;
  const experiment_id id{st.exp.id()};
  if (!st.custom_search) {
    self->send(st.handles.persistence, snapshot_atom::value, id, st.snapshot);
    return;
  }
  auto settled = [self, events = st.custom_events](const caf::error& failure) {
    auto& st = self->state;
    if (!failure)
      st.readable_events = events;
    for (auto& rp : st.posts_waiting) {
      if (failure)
        rp.deliver(failure);
      else
        rp.deliver(true);
    }
    st.posts_waiting.clear();
    if (is_terminal(st.exp.state()))
      quit_when_answered(self);
  };
  self->request(st.handles.persistence, db_timeout, snapshot_atom::value, id, st.snapshot, flush_atom::value)
      .await([=](bool) { settled(caf::error{}); }, [=](caf::error& e) { settled(e); });
}

// What the search answered: its view of the requests it named (and their rungs, told to the
// trials first), then its actions in order, then its snapshot stored.
void process(self_ptr self, search_step step) {
  auto& st = self->state;
  // A search without a length has no batches to measure its progress by: what its trials' processes
  // report is stored with the experiment.
  if (st.cfg.searcher.trains_until_exit() && step.progress > st.progress) {
    st.exp.set_progress(step.progress);
    self->send(st.handles.persistence, update_atom::value, st.exp);
  }
  st.progress = step.progress;
  st.snapshot = std::move(step.snapshot);
  st.custom_events = std::move(step.custom_events);
  for (auto& view : step.requests) {
    sync_rung(self, view.request_id, view.rung);
    st.search_view[view.request_id] = std::move(view);
  }
  for (auto& a : step.actions) {
    if (auto* c = std::get_if<searcher::create_action>(&a)) {
      if (!killed(self))
        create_trial(self, *c);
    } else if (auto* v = std::get_if<searcher::validate_after_action>(&a)) {
      auto& entry = st.trials[v->request_id];
      entry.target = v->length;
      if (entry.handle)
        self->send(entry.handle, train_to_atom::value, entry.target);
    } else if (auto* s = std::get_if<searcher::stop_action>(&a)) {
      auto& entry = st.trials[s->request_id];
      if (entry.handle && !entry.exited)
        self->send(entry.handle, stop_atom::value, s->early);
      else if (!entry.handle && !entry.exited)  // its row is still being stored
        entry.stop_before_start = s->early;
    } else if (auto* d = std::get_if<searcher::shutdown_action>(&a)) {
      if (!st.custom_search)  // a custom search's is saved by finish
        save_snapshot(self);
      finish(self, killed(self) || d->cancel ? pb::STATE_CANCELED
                   : d->failure           ? pb::STATE_ERROR
                                          : pb::STATE_COMPLETED);
      return;
    }
  }
  if (killed(self) && all_trials_exited(self) && st.steps_in_flight == 0) {
    finish(self, pb::STATE_CANCELED);
    return;
  }
  save_snapshot(self);
}

// Hands the search to a searcher actor of its own. `request`: what the search is told first (a
// restore's replayed events, or its initial trials); `decided`: a new experiment's first actions,
// taken with its plan, carried out first.
void hand_over(self_ptr self, const search_request& request, std::vector<searcher::action> decided = {}) {
  auto& st = self->state;
  auto& search = *st.unstarted_search;
  auto step = decide(search, request, std::move(decided));
  for (auto rid : search.open_requests())
    st.search_view[rid] = {rid, search.rung_of(rid), search.training_target(rid)};
  st.searcher = spawn_searcher(self->system(), st.exp.id(), std::move(st.unstarted_search), st.cfg.searcher);
  self->link_to(st.searcher);
  process(self, std::move(step));
}

// A restarted master continues the search from its last snapshot. Trials that
// were live start over (no checkpoints yet); what happened after the snapshot
// is replayed into the searcher from the trial rows.
void restore(self_ptr self) {
  auto& st = self->state;
  const auto& search = *st.unstarted_search;
  auto trials = std::move(*st.restored_trials);
  st.restored_trials.reset();
  auto length = st.cfg.searcher.training_length();
  search_request replay;
  auto append = [&](std::vector<search_event> more) {
    replay.events.insert(replay.events.end(), more.begin(), more.end());
  };
  // Rows stored after the snapshot was taken (every row, without a snapshot) wait until the search
  // asks for them again, and are adopted then.
  std::vector<pb::Trial> requested;
  for (auto& t : trials) {
    if (search.was_requested(t.request_id()))
      requested.push_back(std::move(t));
    else
      st.unclaimed_rows.emplace(t.request_id(), std::move(t));
  }
  int live = 0;
  for (auto& t : requested) {
    auto rid = t.request_id();
    auto& entry = st.trials[rid];
    entry.trial_id = t.id();
    entry.latest_checkpoint = t.latest_checkpoint_uuid();
    if (!entry.latest_checkpoint.empty())  // saved after its last validation, as trials checkpoint last
      entry.checkpoint_length = 0;
    if (auto target = search.trials_wait_at_length() ? search.training_target(rid) : length) {
      entry.target = *target;
    }
    if (is_terminal(t.state())) {
      entry.exited = true;
      entry.final_state = t.state();
      if (!search.was_closed(rid))  // it ended after the snapshot
        append(replayed_exit(t));
      continue;
    }
    // Waiting for the search's next length (or, a custom search's trial, for its first).
    bool waiting = search.trials_wait_at_length() && !search.training_target(rid);
    start_trial(self, t, {}, waiting);
    if (!waiting)
      ++live;
    if (!search.was_created(rid))
      replay.events.push_back(search_events::trial_created{rid});
  }
  // Requests the snapshot names but no row was stored for (a PBT copy waiting for its parent's
  // checkpoint, or a creation the crash cut short) would keep the search open for ever. (A request
  // the replay closes has a row, so it is not among them.)
  for (auto rid : search.open_requests()) {
    if (st.trials.count(rid) || st.unclaimed_rows.count(rid))
      continue;
    logs::warn(logs::component::experiment, "experiment " + std::to_string(st.exp.id()) + " lost trial request " +
                                                 std::to_string(rid) + " with the master; it counts as failed");
    st.trials[rid].exited = true;
    append(exit_events(rid, pb::STATE_ERROR, false));
  }
  // A search with no snapshot begins again: being deterministic, it asks for its stored trials
  // again (by request id), and create_trial adopts their rows.
  if (st.search_from_start)
    replay.events.push_back(search_events::initial_trials{});
  logs::info(logs::component::experiment, "restored experiment " + std::to_string(st.exp.id()) + " with " +
                                              std::to_string(live) + " trials starting over");
  if (killed(self)) {
    for (auto& [rid, t] : st.trials)
      if (t.handle && !t.exited)
        self->send(t.handle, kill_atom::value);
  }
  hand_over(self, replay);
}

// Begins the search, or restores it, once: the message that starts it may come
// after a kill or pause sent right after the actor was spawned.
void start_search(self_ptr self) {
  if (std::exchange(self->state.started, true))
    return;
  auto& st = self->state;
  if (st.restored_trials) {
    restore(self);
  } else if (st.first_actions) {  // taken, and their rows stored, with the experiment
    hand_over(self, {}, *std::exchange(st.first_actions, std::nullopt));
  } else {
    hand_over(self, {{search_events::initial_trials{}}});
  }
}

experiment_actor::behavior_type experiment_impl(self_ptr self, pb::Experiment exp,
                                                experiment_plan plan, master_handles handles,
                                                directory_actor directory) {
  auto& st = self->state;
  st.exp = std::move(exp);
  st.cfg = std::move(*plan.config);
  // A restored row shows its trials' progress, computed: only a search without a length stores its own.
  if (!st.cfg.searcher.trains_until_exit())
    st.exp.clear_progress();
  st.unstarted_search = std::move(plan.search);
  st.custom_search = st.unstarted_search->custom() != nullptr;
  st.trials_wait_at_length = st.unstarted_search->trials_wait_at_length();
  st.progress = st.unstarted_search->progress();
  st.handles = std::move(handles);
  st.directory = std::move(directory);
  st.restored_trials = std::move(plan.restored_trials);
  st.search_from_start = plan.search_from_start;
  st.model_definition = std::move(plan.model_definition);
  st.warm_start_uuid = std::move(plan.warm_start_uuid);
  st.warm_start_dir = std::move(plan.warm_start_dir);
  st.first_actions = std::move(plan.first_actions);
  for (auto& t : plan.first_trials)  // adopted by create_trial as the first actions ask for them
    st.unclaimed_rows.emplace(t.request_id(), std::move(t));
  // Before any trial asks for slots, so that its first request is scheduled by these.
  self->send(pool(self), update_atom::value, job_of(self), scheduling(self));
  self->send(self, start_atom::value);
  return {
      [=](start_atom) { start_search(self); },
      [=](validated_atom, int64_t request_id, double metric, int64_t length) {
        auto& entry = self->state.trials[request_id];
        entry.validated_length = std::max(entry.validated_length, length);
        ask(self, {search_events::validation_completed{request_id, metric, length}});
      },
      [=](progress_atom, int64_t request_id, double share) {
        ask(self, {search_events::trial_progress{request_id, share}});
      },
      [=](exited_atom, int64_t request_id, pb::State final_state, pb::WorkerOutcome worker_said) {
        auto& entry = self->state.trials[request_id];
        entry.exited = true;
        entry.final_state = final_state;
        if (!entry.waiting_copies.empty())  // it will checkpoint no more: copy what it has
          create_waiting_copies(self, entry);
        // An early exit only records why; trial_exited closes the trial.
        ask(self, exit_events(request_id, final_state, worker_said == pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS));
      },
      [=](checkpointed_atom, int64_t request_id, const std::string& checkpoint, int64_t length) {
        auto& entry = self->state.trials[request_id];
        entry.latest_checkpoint = checkpoint;
        entry.checkpoint_length = length;
        if (!entry.waiting_copies.empty() && length >= entry.validated_length)
          create_waiting_copies(self, entry);
      },
      [=](pause_atom) {
        start_search(self);
        auto& st = self->state;
        if (killed(self) || paused(self))
          return true;
        set_state(self, pb::STATE_PAUSED);
        for (auto& [rid, t] : st.trials)
          if (t.handle && !t.exited)
            self->send(t.handle, pause_atom::value);
        return true;
      },
      [=](activate_atom) {
        auto& st = self->state;
        if (killed(self) || !paused(self))
          return true;
        set_state(self, pb::STATE_ACTIVE);
        for (auto& [rid, t] : st.trials)
          if (t.handle && !t.exited)
            self->send(t.handle, activate_atom::value);
        return true;
      },
      [=](kill_atom) {
        start_search(self);  // a restored experiment's trials must exist to be killed
        auto& st = self->state;
        if (killed(self))
          return true;
        set_state(self, pb::STATE_STOPPING_KILLED);  // a paused experiment's paused trials are canceled too
        for (auto& [rid, t] : st.trials)
          if (t.handle && !t.exited)
            self->send(t.handle, kill_atom::value);
        finish_if_killed_and_done(self);
        return true;
      },
      [=](pb::JobSettings& change) {
        auto& st = self->state;
        st.exp.mutable_scheduling()->MergeFrom(change);
        self->send(st.handles.persistence, update_atom::value, experiment_id{st.exp.id()}, change);
        self->send(pool(self), update_atom::value, job_of(self), scheduling(self));
        return true;
      },
      [=](searcher_atom, get_atom) -> caf::result<pb::GetSearcherEventsResponse> {
        auto& st = self->state;
        if (!st.custom_search)
          return make_error(errc::invalid_input, "experiment " + std::to_string(st.exp.id()) + " uses the " +
                                                     st.cfg.searcher.name + " searcher, which has no searcher events");
        // Answered at once, with what is committed; the gateway asks again while there is nothing.
        start_search(self);
        return searcher_events(self);
      },
      [=](pb::PostSearcherOperationsRequest& request) -> caf::result<bool> {
        auto& st = self->state;
        start_search(self);
        // Answered by the save_snapshot that stores the step carrying its operations, once committed.
        auto rp = self->make_response_promise<bool>();
        auto ended = [=]() mutable {
          rp.deliver(make_error(errc::not_found, "experiment " + std::to_string(self->state.exp.id()) + " has ended"));
        };
        ++st.steps_in_flight;
        if (st.custom_search && killed(self)) {
          // Its operations are moot; what its process read is acknowledged.
          search_request acknowledge{{search_events::events_acknowledged{request.triggered_by_event().id()}}};
          self->request(st.searcher, caf::infinite, std::move(acknowledge)).then([=](search_step& step) mutable {
            if (!step_answered(self))
              return ended();
            auto& st = self->state;
            st.snapshot = std::move(step.snapshot);
            st.custom_events = std::move(step.custom_events);
            st.posts_waiting.push_back(rp);
            if (all_trials_exited(self) && st.steps_in_flight == 0)
              finish(self, pb::STATE_CANCELED);  // saves the snapshot
            else
              save_snapshot(self);
          });
          return rp;
        }
        self->request(st.searcher, caf::infinite, std::move(request))
            .then(
                [=](search_step& step) mutable {
                  if (!step_answered(self))
                    return ended();
                  self->state.posts_waiting.push_back(rp);
                  process(self, std::move(step));
                },
                [=](caf::error& e) mutable {
                  if (step_answered(self))
                    finish_if_killed_and_done(self);
                  rp.deliver(std::move(e));
                });
        return rp;
      },
      [=](searcher_atom, inspect_atom) -> caf::result<std::string> {
        auto& st = self->state;
        start_search(self);
        auto rp = self->make_response_promise<std::string>();
        ++st.steps_in_flight;
        self->request(st.searcher, caf::infinite, inspect_atom::value)
            .then(
                [=](std::string& text) mutable {
                  if (step_answered(self))
                    finish_if_killed_and_done(self);
                  rp.deliver(std::move(text));
                },
                [=](caf::error& e) mutable {
                  if (step_answered(self))
                    finish_if_killed_and_done(self);
                  rp.deliver(std::move(e));
                });
        return rp;
      },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        auto job = scheduling(self);
        state_text text{self};
        text.add("id", st.exp.id())
            .add("name", st.exp.name())
            .add("state", pb::State_Name(st.exp.state()))
            .add("searcher", st.cfg.searcher.name)
            .add("metric", st.cfg.searcher.metric)
            .add("progress", st.progress)
            .add("priority", job.priority > 0 ? std::to_string(job.priority) : std::string("the pool's default"))
            .add("weight", job.weight)
            .add("max slots", job.max_slots > 0 ? std::to_string(job.max_slots) : std::string("no limit"))
            .add("trials", st.trials.size());
        for (auto& [rid, t] : st.trials)
          text.add("request " + std::to_string(rid),
                   "trial " + std::to_string(t.trial_id) + ", " +
                       (t.exited ? "exited " + pb::State_Name(t.final_state) : "live") + ", train to " +
                       std::to_string(t.target.value) + " " + config::to_string(t.target.unit));
        return text.str();
      },
  };
}

} // namespace

experiment_plan make_experiment_plan(const std::string& toml, const std::string& source) {
  experiment_plan plan;
  plan.config = std::make_shared<config::experiment_config>(
      config::parse_experiment_config(toml, source));
  plan.search =
      std::make_shared<searcher::searcher>(searcher::make_search_method(*plan.config));
  return plan;
}

pb::Trial new_trial_row(const searcher::create_action& c, const config::experiment_config& cfg,
                          const std::string& warm_start_uuid) {
  pb::Trial t;
  t.set_request_id(c.request_id);
  t.set_hparams(c.hparams_json);
  t.set_seed(c.trial_seed);
  t.set_state(pb::STATE_QUEUED);
  t.set_target_batches(cfg.target_batches());
  t.set_warm_start_checkpoint_uuid(warm_start_uuid);
  return t;
}

experiment_plan restore_experiment_plan(const pb::Experiment& experiment,
                                        const std::string& snapshot,
                                        std::vector<pb::Trial> trials,
                                        std::string model_definition) {
  auto plan = make_experiment_plan(experiment.config(),
                                   "experiment " + std::to_string(experiment.id()));
  if (snapshot.empty()) {
    plan.search_from_start = true;
  } else {
    pb::SearcherSnapshot stored;
    if (!stored.ParseFromString(snapshot))
      throw std::runtime_error("the searcher snapshot of experiment " + std::to_string(experiment.id()) +
                               " is corrupt");
    plan.search->restore(stored);
  }
  plan.restored_trials = std::move(trials);
  plan.model_definition = std::make_shared<const std::string>(std::move(model_definition));
  return plan;
}

experiment_actor spawn_experiment(caf::actor_system& sys, const pb::Experiment& experiment,
                                  experiment_plan plan, const master_handles& handles,
                                  const directory_actor& directory) {
  return sys.spawn(experiment_impl, experiment, std::move(plan), handles, directory);
}

} // namespace det
