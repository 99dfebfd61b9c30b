// The persistence writer: the only code that writes to PostgreSQL but for checkpoint deletion. Metric and
// log rows are buffered and written with COPY, either when a buffer is full
// or soon after its first row: as soon as the mailbox holds nothing older when a
// metric batch waits for its acknowledgement, 100 ms for logs alone. A metric batch is
// acknowledged only once its rows are committed.
// Metrics are committed by a metric writer on a connection of its own, one transaction at a time:
// while it commits, the batches that arrive fill the next one (a pipeline of two), and the
// writer's other work (trials, checkpoints, snapshots) does not wait for a metric commit.
// Reads are persistence_reader.cpp's, on connections of their own, and checkpoint deletion is
// checkpoint_collector.cpp's: neither ever waits in this mailbox ahead of a commit.

#include <chrono>
#include <utility>
#include <set>
#include <iostream>
#include <map>
#include <memory>

#include "actors/change_feed.hpp"
#include "observability/measurements.hpp"
#include "actors/spawn.hpp"
#include "actors/storage_answer.hpp"
#include "messages/states.hpp"
#include "actors/state_text.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"

namespace det {
namespace {

constexpr std::size_t flush_threshold = 4096;
constexpr auto flush_delay = std::chrono::milliseconds(100);

struct metric_ack {
  caf::typed_response_promise<int64_t> promise;
  int64_t reports;
};

/// Commits metric batches on its own connection: answers with the batch once it is committed.
using metric_writer_actor = caf::typed_actor<caf::replies_to<pb::MetricBatch>::with<pb::MetricBatch>>;

metric_writer_actor::behavior_type metric_writer_impl(metric_writer_actor::pointer,
                                                      std::shared_ptr<storage::database> db) {
  return {
      [db](pb::MetricBatch& batch) -> caf::result<pb::MetricBatch> {
        return answer_with(attempt_storage("the metrics were not stored", [&] {
          db->write_metrics(batch.reports());
          return std::move(batch);
        }));
      },
  };
}

struct persistence_state {
  static inline const char* name = "persistence";
  std::shared_ptr<storage::database> db;
  caf::actor_system* system = nullptr;
  metric_writer_actor metric_writer;
  pb::MetricBatch metrics;       // buffered, for the next commit
  std::vector<metric_ack> acks;  // the batches in `metrics`, answered once committed
  bool metric_commit_in_flight = false;
  std::shared_ptr<change_feed> feed;  // where committed changes go, for pages that show them live
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
      std::cerr << "persistence: " << what << " failed: " << e.what() << std::endl;
    }
  }

  /// What `f` returns, or a storage_failed error that says `what` and why (also logged and counted).
  template <class F>
  auto answered(const char* what, F&& f) {
    auto x = attempt_storage(what, std::forward<F>(f));
    if (!x) {
      ++failures;
      std::cerr << "persistence: " << x.error().context().template get_as<std::string>(0) << std::endl;
    }
    return answer_with(std::move(x));
  }

  /// What one metric commit takes: the buffered reports and the batches they came in.
  struct metric_commit {
    pb::MetricBatch batch;
    std::vector<metric_ack> acks;
    std::chrono::steady_clock::time_point began = std::chrono::steady_clock::now();
  };
  metric_commit take_buffered_metrics() {
    metric_commit commit{std::exchange(metrics, pb::MetricBatch{}), std::move(acks)};
    acks.clear();
    return commit;
  }

  /// The end of a metric commit: its batches are acknowledged (or told why not), and its rows go
  /// to the feed.
  void metrics_committed(metric_commit& commit, caf::expected<pb::MetricBatch> written) {
    if (written) {
      metric_reports_written += written->reports_size();
      observability::measurements().metric_reports_ingested.add(written->reports_size());
      observability::measurements().commit_seconds.observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - commit.began).count());
    } else {
      ++failures;
      std::cerr << "persistence: " << system->render(written.error()) << std::endl;
    }
    for (auto& ack : commit.acks) {
      if (written)
        ack.promise.deliver(ack.reports);
      else
        ack.promise.deliver(written.error());
    }
    if (written) feed->publish_metrics(std::move(*written->mutable_reports()));
  }

  /// Commits the buffered metrics and waits for it, and so for any commit under way before it.
  void commit_metrics_now() {
    if (metrics.reports().empty() && !metric_commit_in_flight)
      return;
    auto commit = take_buffered_metrics();
    caf::expected<pb::MetricBatch> written{pb::MetricBatch{}};
    caf::scoped_actor waiter{*system};
    waiter->request(metric_writer, caf::infinite, std::move(commit.batch))
        .receive([&](pb::MetricBatch& batch) { written = std::move(batch); },
                 [&](caf::error& e) { written = std::move(e); });
    metrics_committed(commit, std::move(written));
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
    // After the trial rows, which are written as they arrive: a snapshot never
    // names a trial whose row is missing.
    for (auto& [id, bytes] : snapshots)
      guarded("saving a searcher snapshot", [&, id = id] { db->save_snapshot(id, bytes); });
    snapshots.clear();
  }

  /// Writes what is buffered, committed before it returns (metrics included).
  void flush() {
    commit_metrics_now();
    write_logs_and_snapshots();
  }

  // CAF destroys the state when the actor exits (before attached functors run), so the last rows
  // are written here, the metrics on this actor's own connection: the metric writer may be gone.
  ~persistence_state() {
    if (!db)
      return;
    guarded("writing metrics", [&] { db->write_metrics(metrics.reports()); });
    write_logs_and_snapshots();
  }
};

using self_ptr = persistence_actor::stateful_pointer<persistence_state>;

/// Hands the buffered metrics to the metric writer unless a commit is under way; the end of
/// that one hands over what arrived meanwhile.
void commit_metrics(self_ptr self) {
  auto& st = self->state;
  if (st.metric_commit_in_flight || st.metrics.reports().empty())
    return;
  st.metric_commit_in_flight = true;
  auto commit = std::make_shared<persistence_state::metric_commit>(st.take_buffered_metrics());
  auto done = [self, commit](caf::expected<pb::MetricBatch> written) {
    self->state.metric_commit_in_flight = false;
    self->state.metrics_committed(*commit, std::move(written));
    commit_metrics(self);
  };
  self->request(self->state.metric_writer, caf::infinite, std::move(commit->batch))
      .then([done](pb::MetricBatch& batch) { done(std::move(batch)); }, [done](caf::error& e) { done(std::move(e)); });
}

void schedule_flush(self_ptr self) {
  auto& st = self->state;
  if (st.logs.size() >= flush_threshold)
    st.write_logs_and_snapshots();
  if (static_cast<std::size_t>(st.metrics.reports_size()) >= flush_threshold) {
    commit_metrics(self);
    return;
  }
  if (!st.acks.empty() && !st.ack_tick_scheduled) {
    st.ack_tick_scheduled = true;
    self->send(self, tick_atom::value);  // behind what is already queued: a group commit
  } else if (!st.tick_scheduled) {
    st.tick_scheduled = true;
    self->delayed_send(self, flush_delay, tick_atom::value);
  }
}

persistence_actor::behavior_type persistence_impl(self_ptr self, std::shared_ptr<storage::database> db,
                                                  std::shared_ptr<storage::database> metric_db,
                                                  std::shared_ptr<change_feed> feed) {
  self->state.db = std::move(db);
  self->state.system = &self->system();
  // Detached (it blocks on its connection) and linked: it ends with this actor.
  self->state.metric_writer = self->spawn<caf::detached + caf::linked>(metric_writer_impl, std::move(metric_db));
  self->state.feed = std::move(feed);
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
      [=](create_atom, pb::Trial& t) -> caf::result<int64_t> {
        return self->state.answered("the trial could not be stored", [&] {
          const auto id = self->state.db->insert_trial(t);
          changed(change_kind::experiment, t.experiment_id());
          return id;
        });
      },
      [=](update_atom, pb::Experiment& e) {
        self->state.guarded("updating an experiment", [&] {
          self->state.db->set_experiment_state(e.id(), e.state(), is_terminal(e.state()));
          changed(change_kind::experiment, e.id());
        });
      },
      [=](update_atom, pb::Trial& t) {
        // A trial's metrics must land before its final state does.
        if (is_terminal(t.state()))
          self->state.flush();
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
        st.flush();
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
        // The reports change hands as pointers: no copy, no allocation per report.
        auto& buffered = *self->state.metrics.mutable_reports();
        if (buffered.empty()) {
          buffered.Swap(batch.mutable_reports());
        } else {
          std::vector<pb::MetricReport*> taken(static_cast<std::size_t>(n));
          batch.mutable_reports()->ExtractSubrange(0, static_cast<int>(n), taken.data());
          for (auto* r : taken) buffered.AddAllocated(r);
        }
        self->state.acks.push_back({rp, n});
        schedule_flush(self);
        return rp;
      },
      [=](pb::LogBatch& batch) {
        for (auto& e : *batch.mutable_entries())
          self->state.logs.push_back(std::move(e));
        schedule_flush(self);
      },
      [=](flush_atom) -> int64_t {
        self->state.flush();
        return self->state.metric_reports_written;
      },
      [=](tick_atom) {
        // Either tick writes everything; the other then finds little or nothing to do.
        self->state.tick_scheduled = false;
        self->state.ack_tick_scheduled = false;
        commit_metrics(self);
        self->state.write_logs_and_snapshots();
      },
      [=](pb::Checkpoint& c) -> bool {
        bool ok = false;
        self->state.guarded("recording a checkpoint", [&] {
          self->state.db->insert_checkpoint(c);
          changed(change_kind::trial, c.trial_id());
          ok = true;
        });
        return ok;
      },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        return state_text{self}
            .add("buffered metric reports", st.metrics.reports_size())
            .add("metric commit under way", st.metric_commit_in_flight ? "yes" : "no")
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
                                    std::shared_ptr<storage::database> metric_db, std::shared_ptr<change_feed> feed) {
  return sys.spawn<caf::detached>(persistence_impl, std::move(db), std::move(metric_db), std::move(feed));
}

} // namespace det
