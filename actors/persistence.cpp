// The persistence actor: the only code that talks to PostgreSQL. Metric and
// log rows are buffered and written with COPY, either when a buffer is full
// or 100 ms after its first row, so that a burst of reports costs one round
// trip; reads for the REST API are answered from the database.

#include <chrono>
#include <iostream>
#include <memory>

#include "actors/spawn.hpp"
#include "actors/state_text.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"

namespace det {
namespace {

constexpr std::size_t flush_threshold = 4096;
constexpr auto flush_delay = std::chrono::milliseconds(100);

struct persistence_state {
  static inline const char* name = "persistence";
  std::shared_ptr<storage::database> db;
  std::vector<pb::MetricReport> metrics;
  std::vector<pb::LogEntry> logs;
  int64_t metric_reports_written = 0;
  int64_t log_lines_written = 0;
  int64_t failures = 0;
  bool tick_scheduled = false;
};

using self_ptr = persistence_actor::stateful_pointer<persistence_state>;

bool is_terminal(pb::State s) {
  return s == pb::STATE_COMPLETED || s == pb::STATE_CANCELED || s == pb::STATE_ERROR;
}

// A failed write is reported and dropped rather than retried forever: the
// actor must keep serving the cluster even when one batch is rejected.
template <class F>
void guarded(self_ptr self, const char* what, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    ++self->state.failures;
    std::cerr << "persistence: " << what << " failed: " << e.what() << std::endl;
  }
}

void flush(self_ptr self) {
  auto& st = self->state;
  if (!st.metrics.empty()) {
    guarded(self, "writing metrics", [&] { st.db->write_metrics(st.metrics); });
    st.metric_reports_written += static_cast<int64_t>(st.metrics.size());
    st.metrics.clear();
  }
  if (!st.logs.empty()) {
    guarded(self, "writing logs", [&] { st.db->write_logs(st.logs); });
    st.log_lines_written += static_cast<int64_t>(st.logs.size());
    st.logs.clear();
  }
}

void schedule_flush(self_ptr self) {
  auto& st = self->state;
  if (st.metrics.size() + st.logs.size() >= flush_threshold) {
    flush(self);
    return;
  }
  if (!st.tick_scheduled) {
    st.tick_scheduled = true;
    self->delayed_send(self, flush_delay, tick_atom::value);
  }
}

persistence_actor::behavior_type persistence_impl(self_ptr self,
                                                  std::shared_ptr<storage::database> db) {
  self->state.db = std::move(db);
  self->attach_functor([self] { flush(self); });
  return {
      [=](create_atom, pb::Experiment& e) -> int64_t {
        int64_t id = 0;
        guarded(self, "creating an experiment", [&] { id = self->state.db->insert_experiment(e); });
        return id;
      },
      [=](create_atom, pb::Trial& t) -> int64_t {
        int64_t id = 0;
        guarded(self, "creating a trial", [&] { id = self->state.db->insert_trial(t); });
        return id;
      },
      [=](update_atom, pb::Experiment& e) {
        guarded(self, "updating an experiment", [&] {
          self->state.db->set_experiment_state(e.id(), e.state(), is_terminal(e.state()));
        });
      },
      [=](update_atom, pb::Trial& t) {
        // Metrics of a trial must land before its final state does.
        flush(self);
        guarded(self, "updating a trial", [&] {
          self->state.db->set_trial_state(t.id(), t.state(), is_terminal(t.state()),
                                          t.exit_reason());
          self->state.db->set_trial_restarts(t.id(), t.restarts());
        });
      },
      [=](update_atom, pb::Agent& a) {
        guarded(self, "saving an agent", [&] { self->state.db->upsert_agent(a); });
      },
      [=](pb::MetricBatch& batch) -> int64_t {
        auto n = static_cast<int64_t>(batch.reports_size());
        for (auto& r : *batch.mutable_reports())
          self->state.metrics.push_back(std::move(r));
        schedule_flush(self);
        return n;
      },
      [=](pb::LogBatch& batch) {
        for (auto& e : *batch.mutable_entries())
          self->state.logs.push_back(std::move(e));
        schedule_flush(self);
      },
      [=](flush_atom) -> int64_t {
        flush(self);
        return self->state.metric_reports_written;
      },
      [=](tick_atom) {
        self->state.tick_scheduled = false;
        flush(self);
      },
      [=](list_atom) -> pb::GetExperimentsResponse {
        pb::GetExperimentsResponse out;
        guarded(self, "listing experiments", [&] {
          for (auto& e : self->state.db->list_experiments())
            *out.add_experiments() = std::move(e);
        });
        return out;
      },
      [=](get_atom, experiment_id id) -> pb::GetExperimentResponse {
        pb::GetExperimentResponse out;
        guarded(self, "reading an experiment", [&] {
          if (auto e = self->state.db->get_experiment(id.value)) {
            *out.mutable_experiment() = std::move(*e);
            for (auto& t : self->state.db->trials_of(id.value))
              *out.add_trials() = std::move(t);
          }
        });
        return out;
      },
      [=](get_atom, trial_id id) -> pb::GetTrialResponse {
        pb::GetTrialResponse out;
        guarded(self, "reading a trial", [&] {
          if (auto t = self->state.db->get_trial(id.value))
            *out.mutable_trial() = std::move(*t);
        });
        return out;
      },
      [=](metrics_atom, trial_id id, const std::string& group) -> pb::GetTrialMetricsResponse {
        flush(self);
        pb::GetTrialMetricsResponse out;
        guarded(self, "reading metrics", [&] {
          for (auto& m : self->state.db->trial_metrics(id.value, group))
            *out.add_metrics() = std::move(m);
        });
        return out;
      },
      [=](logs_atom, trial_id id, int64_t after, int32_t limit) -> pb::TrialLogsResponse {
        flush(self);
        pb::TrialLogsResponse out;
        guarded(self, "reading logs", [&] {
          for (auto& l : self->state.db->trial_logs(id.value, after, limit))
            *out.add_logs() = std::move(l);
        });
        return out;
      },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        return state_text{self}
            .add("buffered metric reports", st.metrics.size())
            .add("buffered log lines", st.logs.size())
            .add("metric reports written", st.metric_reports_written)
            .add("log lines written", st.log_lines_written)
            .add("failed writes", st.failures)
            .str();
      },
  };
}

} // namespace

persistence_actor spawn_persistence(caf::actor_system& sys,
                                    std::shared_ptr<storage::database> db) {
  return sys.spawn<caf::detached>(persistence_impl, std::move(db));
}

} // namespace det
