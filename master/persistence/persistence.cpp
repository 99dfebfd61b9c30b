// The persistence writer: the only code that writes to PostgreSQL but for checkpoint deletion. Metric and
// log rows are buffered and written with COPY, either when a buffer is full
// or soon after its first row: as soon as the mailbox holds nothing older when a
// metric batch waits for its acknowledgement, 100 ms for logs alone. A metric batch is
// acknowledged only once its rows are committed.
// Metrics are written by two metric writers, each on a connection of its own: batches stream into
// a writer's open transaction as they arrive and it commits when its mailbox holds no more, while
// the other's server inserts the rows it was sent (metric_routing.hpp says which writer takes a
// batch). The writer's other work (trial states, logs, snapshots) does not wait for a metric commit,
// and the rows a slot or a worker waits for (a new trial, a checkpoint) are row_writer.cpp's.
// Reads are persistence_reader.cpp's, on connections of their own, and checkpoint deletion is
// checkpoint_collector.cpp's: neither ever waits in this mailbox ahead of a commit.

#include <algorithm>
#include <array>
#include <chrono>
#include <utility>
#include <set>
#include <map>
#include <memory>

#include "master/persistence/change_feed.hpp"
#include "master/persistence/metric_routing.hpp"
#include "observability/measurements.hpp"
#include "master/spawn.hpp"
#include "master/persistence/storage_answer.hpp"
#include "messages/states.hpp"
#include "node/state_text.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"
#include "node/log.hpp"

namespace det {
namespace {

constexpr std::size_t flush_threshold = 4096;
constexpr auto flush_delay = std::chrono::milliseconds(100);

// Two: with more, on two cores, each commit took fewer rows and the whole went slower.
constexpr std::size_t metric_writers = 2;

struct metric_ack {
  caf::typed_response_promise<int64_t> promise;
  int64_t reports;
  std::vector<int64_t> trials;  // distinct
};

/// Asks a metric writer to commit with its trials' summaries (storage::summary_timing::now).
using settle_atom = caf::atom_constant<caf::atom("settle")>;
/// A metric writer's reminder to write the summaries its commits kept.
using summaries_atom = caf::atom_constant<caf::atom("summaries")>;

/// Streams metric batches into a transaction on its own connection (the first begins it) and
/// commits it when asked, answering with how many reports it committed, which then go to the feed.
/// A flush writes the trials' summaries when they are due, a settle at once; summaries kept are
/// written within summary_interval even when no more metrics come.
using metric_writer_actor = caf::typed_actor<caf::reacts_to<pb::MetricBatch>, caf::replies_to<flush_atom>::with<int64_t>,
                                             caf::replies_to<settle_atom>::with<int64_t>, caf::reacts_to<summaries_atom>>;

struct metric_writer_state {
  static inline const char* name = "metric writer";
  std::shared_ptr<storage::database> db;
  std::shared_ptr<change_feed> feed;
  bool summaries_reminder_sent = false;

  // A shut-down keeps what was appended, unanswered, as the persistence writer keeps its buffers.
  ~metric_writer_state() {
    if (!db) return;
    try {
      db->commit_metrics(storage::summary_timing::now);
    } catch (const std::exception& e) {
      logs::error(logs::component::storage, std::string("writing metrics failed: ") + e.what());
    }
  }
};

using metric_writer_ptr = metric_writer_actor::stateful_pointer<metric_writer_state>;

/// Has the writer write the summaries its commits kept within summary_interval, even when no more
/// metrics come; one reminder at a time.
void remind_of_kept_summaries(metric_writer_ptr self) {
  if (!self->state.db->keeps_summaries() || self->state.summaries_reminder_sent) return;
  self->state.summaries_reminder_sent = true;
  self->delayed_send(self, storage::summary_interval, summaries_atom::value);
}

metric_writer_actor::behavior_type metric_writer_impl(
    metric_writer_ptr self, std::shared_ptr<storage::database> db,
    std::shared_ptr<change_feed> feed) {
  self->state.db = std::move(db);
  self->state.feed = std::move(feed);
  auto commit = [self](storage::summary_timing timing) {
    auto rp = self->make_response_promise<int64_t>();
    auto committed =
        attempt_storage("the metrics were not stored", [&] { return self->state.db->commit_metrics(timing); });
    if (!committed) {
      rp.deliver(committed.error());
      return rp;
    }
    rp.deliver(static_cast<int64_t>(committed->reports_size()));
    remind_of_kept_summaries(self);
    // Answered first: the feed (pages that show metrics live) is not on the reporters' critical path.
    self->state.feed->publish_metrics(*committed);
    return rp;
  };
  return {
      [self](pb::MetricBatch& batch) { self->state.db->append_metrics(std::move(*batch.mutable_reports())); },
      [commit](flush_atom) { return commit(storage::summary_timing::when_due); },
      [commit](settle_atom) { return commit(storage::summary_timing::now); },
      [self](summaries_atom) {
        self->state.summaries_reminder_sent = false;
        auto written = attempt_storage("the metric summaries were not stored", [&] {
          self->state.db->write_kept_summaries();
          return true;
        });
        if (!written) logs::error(logs::component::storage, self->system().render(written.error()));
        remind_of_kept_summaries(self);  // reports were being appended, or the write failed
      },
  };
}

/// A metric writer and the batches appended to its open transaction.
struct metric_lane {
  metric_writer_actor writer;
  std::vector<metric_ack> acks;  // answered once the transaction commits
  std::size_t reports = 0;       // in acks
  bool committing = false;       // an earlier transaction's commit is under way
};

struct persistence_state {
  static inline const char* name = "persistence";
  std::shared_ptr<storage::database> db;
  caf::actor_system* system = nullptr;
  std::array<metric_lane, metric_writers> lanes;
  metric_routing routing{metric_writers};
  std::shared_ptr<change_feed> feed;  // where committed changes go, for pages that show them live
  row_writer_actor rows;
  std::vector<pb::LogEntry> logs;
  // Only the latest searcher snapshot of each experiment matters: an experiment
  // sends one per decision, and writing each would cost a commit per event.
  std::map<int64_t, std::string> snapshots;  // by experiment id
  int64_t metric_reports_written = 0;
  int64_t log_lines_written = 0;
  int64_t failures = 0;
  bool tick_scheduled = false;
  bool ack_tick_scheduled = false;

  // A failed write is reported and dropped rather than retried forever: the
  // actor must keep serving the cluster even when one batch is rejected.
  template <class F>
  void guarded(const char* what, F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      ++failures;
      logs::error(logs::component::storage, std::string(what) + " failed: " + e.what());
    }
  }

  /// What `f` returns, or a storage_failed error that says `what` and why (also logged and counted).
  template <class F>
  auto answered(const char* what, F&& f) {
    auto x = attempt_storage(what, std::forward<F>(f));
    if (!x) {
      ++failures;
      logs::error(logs::component::storage, x.error().context().template get_as<std::string>(0));
    }
    return answer_with(std::move(x));
  }

  /// The batches one metric commit answers.
  struct metric_commit {
    std::size_t lane;
    std::vector<metric_ack> acks;
    std::chrono::steady_clock::time_point began = std::chrono::steady_clock::now();
  };
  /// Starts the commit of a lane's transaction: what arrives from now on goes into its next one.
  metric_commit start_commit(std::size_t lane) {
    metric_commit commit{lane, std::exchange(lanes[lane].acks, {})};
    lanes[lane].reports = 0;
    return commit;
  }

  /// The end of a metric commit: its batches are acknowledged (or told why not), and its rows go
  /// to the feed.
  void metrics_committed(metric_commit& commit, caf::expected<int64_t> written) {
    if (written) {
      metric_reports_written += *written;
      observability::measurements().metric_reports_ingested.add(*written);
      observability::measurements().commit_seconds.observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - commit.began).count());
    } else {
      ++failures;
      logs::error(logs::component::storage, system->render(written.error()));
    }
    for (auto& ack : commit.acks) {
      if (written)
        ack.promise.deliver(ack.reports);
      else
        ack.promise.deliver(written.error());
      routing.settled(commit.lane, ack.trials, static_cast<std::size_t>(ack.reports));
    }
  }

  /// Commits every appended metric and waits for it, and before it for the commits under way. With
  /// summary_timing::now, the trials' summaries are written too, also those earlier commits kept.
  void commit_metrics_now(storage::summary_timing summaries) {
    caf::scoped_actor waiter{*system};
    const bool settle = summaries == storage::summary_timing::now;
    auto ask = [&](metric_lane& lane) {
      caf::expected<int64_t> written{int64_t{0}};
      auto answered = [&](int64_t committed) { written = committed; };
      auto failed = [&](caf::error& e) { written = std::move(e); };
      if (settle)
        waiter->request(lane.writer, caf::infinite, settle_atom::value).receive(answered, failed);
      else
        waiter->request(lane.writer, caf::infinite, flush_atom::value).receive(answered, failed);
      return written;
    };
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      // A writer answers this after the commit under way, whose own answer comes to this actor's
      // mailbox; with nothing appended, a settle writes the summaries it kept, if any.
      if (lanes[i].acks.empty()) {
        if (!settle && !lanes[i].committing) continue;
        if (auto settled = ask(lanes[i]); !settled)
          logs::error(logs::component::storage, "writing metrics failed: " + system->render(settled.error()));
        continue;
      }
      auto commit = start_commit(i);
      metrics_committed(commit, ask(lanes[i]));
    }
  }

  /// Waits until the row writer has committed what it was asked before now.
  void await_rows() {
    caf::scoped_actor waiter{*system};
    waiter->request(rows, caf::infinite, flush_atom::value)
        .receive([](bool) {},
                 [&](caf::error& e) {
                   logs::error(logs::component::storage, "the row writer did not answer: " + system->render(e));
                 });
  }

  /// Writes the buffered log lines and searcher snapshots.
  void write_logs_and_snapshots() {
    if (!logs.empty()) {
      const auto began = std::chrono::steady_clock::now();
      guarded("writing logs", [&] {
        db->write_logs(logs);
        std::set<int64_t> trials_with_lines;
        for (const auto& line : logs)
          if (line.trial_id() != 0) trials_with_lines.insert(line.trial_id());
        for (auto trial : trials_with_lines) feed->publish(change_kind::logs, trial);
        observability::measurements().log_lines_ingested.add(logs.size());
      });
      log_lines_written += static_cast<int64_t>(logs.size());
      logs.clear();
      observability::measurements().commit_seconds.observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    }
    // After the trial rows, which the row writer commits as they are asked for (before the
    // snapshot naming them was sent here): a snapshot never names a trial whose row is missing.
    if (!snapshots.empty()) await_rows();
    for (auto& [id, bytes] : snapshots)
      guarded("saving a searcher snapshot", [&, id = id] { db->save_snapshot(id, bytes); });
    snapshots.clear();
  }

  /// Writes what is buffered, committed before it returns (metrics included, with the trials'
  /// summaries as `summaries` says).
  void flush(storage::summary_timing summaries) {
    commit_metrics_now(summaries);
    write_logs_and_snapshots();
  }

  // CAF destroys the state when the actor exits (before attached functors run), so the last rows
  // are written here; the metric writers commit theirs as they exit.
  ~persistence_state() {
    if (!db)
      return;
    write_logs_and_snapshots();
  }
};

using self_ptr = persistence_actor::stateful_pointer<persistence_state>;

/// Commits a lane's transaction unless it is still committing the one before; the end of that
/// commit starts the next.
void commit_metrics(self_ptr self, std::size_t lane) {
  auto& st = self->state;
  if (st.lanes[lane].committing || st.lanes[lane].acks.empty())
    return;
  st.lanes[lane].committing = true;
  auto commit = std::make_shared<persistence_state::metric_commit>(st.start_commit(lane));
  auto done = [self, commit](caf::expected<int64_t> written) {
    self->state.lanes[commit->lane].committing = false;
    self->state.metrics_committed(*commit, std::move(written));
    commit_metrics(self, commit->lane);
  };
  self->request(st.lanes[lane].writer, caf::infinite, flush_atom::value)
      .then([done](int64_t committed) { done(committed); }, [done](caf::error& e) { done(std::move(e)); });
}

/// The distinct trials of a batch's reports: one, from a trial actor.
std::vector<int64_t> trials_of(const pb::MetricBatch& batch) {
  std::vector<int64_t> trials;
  for (const auto& r : batch.reports())
    if (std::find(trials.begin(), trials.end(), r.trial_id()) == trials.end()) trials.push_back(r.trial_id());
  return trials;
}

void schedule_flush(self_ptr self) {
  auto& st = self->state;
  if (st.logs.size() >= flush_threshold)
    st.write_logs_and_snapshots();
  bool acks_waiting = false;
  for (std::size_t i = 0; i < st.lanes.size(); ++i) {
    if (st.lanes[i].reports >= flush_threshold) commit_metrics(self, i);
    acks_waiting = acks_waiting || !st.lanes[i].acks.empty();
  }
  if (acks_waiting && !st.ack_tick_scheduled) {
    st.ack_tick_scheduled = true;
    self->send(self, tick_atom::value);  // behind what is already queued: a group commit
  } else if (!st.tick_scheduled) {
    st.tick_scheduled = true;
    self->delayed_send(self, flush_delay, tick_atom::value);
  }
}

persistence_actor::behavior_type persistence_impl(self_ptr self, std::shared_ptr<storage::database> db,
                                                  std::array<std::shared_ptr<storage::database>, metric_writers> metric_dbs,
                                                  std::shared_ptr<change_feed> feed, row_writer_actor rows) {
  self->state.db = std::move(db);
  self->state.system = &self->system();
  self->state.feed = std::move(feed);
  self->state.rows = std::move(rows);
  self->link_to(self->state.rows);
  // Detached (each blocks on its connection) and linked: they end with this actor.
  for (std::size_t i = 0; i < metric_dbs.size(); ++i)
    self->state.lanes[i].writer =
        self->spawn<caf::detached + caf::linked>(metric_writer_impl, metric_dbs[i], self->state.feed);
  // Each change is published once stored, so that a page that reloads on it reads it.
  auto changed = [self](change_kind kind, int64_t id, int64_t experiment = 0) {
    self->state.feed->publish(kind, id, experiment);
  };
  return {
      [=](create_atom, pb::GetExperimentResponse& e,
          const std::string& model_definition) -> caf::result<pb::GetExperimentResponse> {
        return self->state.answered("the experiment could not be stored", [&] {
          std::vector<pb::Trial> trials(e.trials().begin(), e.trials().end());
          const auto id = self->state.db->insert_experiment(e.experiment(), model_definition, &trials);
          e.mutable_experiment()->set_id(id);
          e.clear_trials();
          for (auto& t : trials) *e.add_trials() = std::move(t);
          changed(change_kind::experiment, id);
          return e;
        });
      },
      [=](update_atom, experiment_id id, pb::PatchExperimentRequest& change) -> caf::result<bool> {
        return self->state.answered("the change could not be stored", [&] {
          self->state.db->annotate_experiment(id.value, change);
          changed(change_kind::experiment, id.value);
          return true;
        });
      },
      [=](add_atom, experiment_id id, const std::string& label) -> caf::result<bool> {
        return self->state.answered("the label could not be stored", [&] {
          self->state.db->add_experiment_label(id.value, label);
          changed(change_kind::experiment, id.value);
          return true;
        });
      },
      [=](remove_atom, experiment_id id, const std::string& label) -> caf::result<bool> {
        return self->state.answered("the label could not be removed", [&] {
          self->state.db->remove_experiment_label(id.value, label);
          changed(change_kind::experiment, id.value);
          return true;
        });
      },
      [=](archive_atom, experiment_id id, bool archived) -> caf::result<bool> {
        return self->state.answered("the experiment could not be archived", [&] {
          const bool done = self->state.db->set_experiment_archived(id.value, archived);
          changed(change_kind::experiment, id.value);
          return done;
        });
      },
      [=](update_atom, pb::Experiment& e) {
        self->state.guarded("updating an experiment", [&] {
          // Only a search without a length sets the progress it keeps (see process() in experiment.cpp).
          self->state.db->set_experiment_state(e.id(), e.state(), is_terminal(e.state()),
                                               e.progress() > 0 ? e.progress() : -1);
          changed(change_kind::experiment, e.id());
        });
      },
      [=](update_atom, pb::Trial& t) {
        // A trial's metrics, and its summary, must land before its final state does. Its logs need
        // not: readers have them written first, and the next tick writes them with the other
        // trials' (trials of one search on many slots tend to end together).
        if (is_terminal(t.state()))
          self->state.commit_metrics_now(storage::summary_timing::now);
        self->state.guarded("updating a trial", [&] {
          self->state.db->update_trial(t);
          changed(change_kind::trial, t.id(), t.experiment_id());
        });
      },
      [=](snapshot_atom, experiment_id id, std::string& snapshot) {
        self->state.snapshots[id.value] = std::move(snapshot);
        schedule_flush(self);
      },
      [=](snapshot_atom, experiment_id id, std::string& snapshot, flush_atom) -> caf::result<bool> {
        auto& st = self->state;
        st.snapshots.erase(id.value);  // an older one of the same search, buffered
        st.flush(storage::summary_timing::when_due);  // the search reads no summary
        return st.answered("saving a searcher snapshot", [&] {
          st.db->save_snapshot(id.value, snapshot);
          return true;
        });
      },
      [=](update_atom, experiment_id id, pb::JobSettings& settings) {
        self->state.guarded("recording scheduling settings", [&] {
          self->state.db->set_experiment_scheduling(id.value, settings);
          changed(change_kind::experiment, id.value);
        });
      },
      [=](update_atom, pb::Agent& a) {
        self->state.guarded("saving an agent", [&] { self->state.db->upsert_agent(a); });
      },
      [=](pb::MetricBatch& batch) -> caf::typed_response_promise<int64_t> {
        auto rp = self->make_response_promise<int64_t>();
        auto n = static_cast<int64_t>(batch.reports_size());
        if (n == 0) {
          rp.deliver(n);
          return rp;
        }
        auto& st = self->state;
        auto trials = trials_of(batch);
        auto writer = st.routing.writer_for(trials);
        if (!writer) {  // its trials' earlier batches wait on different writers
          st.commit_metrics_now(storage::summary_timing::when_due);
          writer = st.routing.writer_for(trials);
        }
        auto& lane = st.lanes[*writer];
        self->send(lane.writer, std::move(batch));
        st.routing.appended(*writer, trials, static_cast<std::size_t>(n));
        lane.acks.push_back({rp, n, std::move(trials)});
        lane.reports += static_cast<std::size_t>(n);
        schedule_flush(self);
        return rp;
      },
      [=](pb::LogBatch& batch) {
        for (auto& e : *batch.mutable_entries())
          self->state.logs.push_back(std::move(e));
        schedule_flush(self);
      },
      [=](flush_atom) -> int64_t {
        // Asked by readers that must see every write so far, and before a shut-down.
        self->state.flush(storage::summary_timing::now);
        return self->state.metric_reports_written;
      },
      [=](tick_atom) {
        // Either tick writes everything; the other then finds little or nothing to do.
        self->state.tick_scheduled = false;
        self->state.ack_tick_scheduled = false;
        for (std::size_t i = 0; i < self->state.lanes.size(); ++i) commit_metrics(self, i);
        self->state.write_logs_and_snapshots();
      },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        std::size_t appended = 0, committing = 0;
        for (const auto& lane : st.lanes) {
          appended += lane.reports;
          committing += lane.committing ? 1 : 0;
        }
        return state_text{self}
            .add("metric reports in the next commits", appended)
            .add("metric commits under way", committing)
            .add("buffered log lines", st.logs.size())
            .add("buffered searcher snapshots", st.snapshots.size())
            .add("metric reports written", st.metric_reports_written)
            .add("log lines written", st.log_lines_written)
            .add("failed writes", st.failures)
            .str();
      },
  };
}

} // namespace

persistence_actor spawn_persistence(caf::actor_system& sys, std::shared_ptr<storage::database> db,
                                    const std::string& conninfo, std::shared_ptr<change_feed> feed,
                                    const row_writer_actor& rows) {
  std::array<std::shared_ptr<storage::database>, metric_writers> metric_dbs;
  for (auto& connection : metric_dbs) connection = std::make_shared<storage::database>(conninfo);
  return sys.spawn<caf::detached>(persistence_impl, std::move(db), std::move(metric_dbs), std::move(feed), rows);
}

} // namespace det
