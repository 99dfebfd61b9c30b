// Readers: answer the REST API's reads, each on a PostgreSQL connection of its own, so that a
// large read never sits in the writer's mailbox ahead of the commits that workers wait on. A few
// of them stand behind one round-robin pool. Reads of rows the writer buffers (metrics, logs, and
// checkpoints with their validation metrics) first ask it to write what it holds, so that a
// client reads its own writes; the writer never waits on a reader.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>

#include "master/spawn.hpp"
#include "master/persistence/storage_answer.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"

namespace det {
namespace {

constexpr auto flush_timeout = std::chrono::seconds(30);

struct reader_state {
  static inline const char* name = "persistence-reader";
  std::unique_ptr<storage::database> db;
  persistence_actor writer;
};

using self_ptr = persistence_reader_actor::stateful_pointer<reader_state>;

template <class Read>
auto attempt(const char* what, Read&& read) {
  return attempt_storage(std::string{"cannot read "} + what, std::forward<Read>(read));
}

template <class Read>
auto answer(const char* what, Read&& read) {
  return answer_with(attempt(what, std::forward<Read>(read)));
}

/// Answers with `read()` once the writer has written what it buffered.
template <class Reply, class Read>
caf::result<Reply> after_flush(self_ptr self, const char* what, Read read) {
  auto rp = self->make_response_promise<Reply>();
  self->request(self->state.writer, flush_timeout, flush_atom::value)
      .then(
          [=](int64_t) mutable {
            auto rows = attempt(what, read);
            if (rows)
              rp.deliver(std::move(*rows));
            else
              rp.deliver(std::move(rows.error()));
          },
          [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

template <class Response, class Rows>
Response checkpoints_response(Rows rows) {
  Response out;
  for (auto& c : rows) *out.add_checkpoints() = std::move(c);
  return out;
}

persistence_reader_actor::behavior_type reader_impl(self_ptr self, std::string conninfo, persistence_actor writer) {
  self->state.db = std::make_unique<storage::database>(conninfo);
  self->state.writer = std::move(writer);
  auto& db = *self->state.db;
  return {
      [=, &db](list_atom, int64_t offset, int32_t limit, const pb::ExperimentFilter& filter) {
        return answer("the experiments", [&] {
          pb::GetExperimentsResponse out;
          for (auto& e : db.list_experiments(offset, limit, filter)) *out.add_experiments() = std::move(e);
          const int64_t total = db.count_experiments(filter);
          auto& page = *out.mutable_pagination();
          page.set_offset(static_cast<int32_t>(std::min<int64_t>(offset, INT32_MAX)));
          page.set_limit(limit);
          page.set_start_index(static_cast<int32_t>(std::min(offset, total)));
          page.set_end_index(static_cast<int32_t>(std::min(offset, total) + out.experiments_size()));
          page.set_total(static_cast<int32_t>(std::min<int64_t>(total, INT32_MAX)));
          return out;
        });
      },
      [=, &db](get_atom, experiment_id id) {
        return answer("an experiment", [&] {
          pb::GetExperimentResponse out;
          if (auto e = db.get_experiment(id.value)) {
            *out.mutable_experiment() = std::move(*e);
            for (auto& t : db.trials_of(id.value)) *out.add_trials() = std::move(t);
          }
          return out;
        });
      },
      [=, &db](get_atom, trial_id id) {
        return answer("a trial", [&] {
          pb::GetTrialResponse out;
          if (auto t = db.get_trial(id.value)) *out.mutable_trial() = std::move(*t);
          return out;
        });
      },
      [=, &db](metrics_atom, trial_id id, const std::string& group, int64_t offset, int32_t limit) {
        return after_flush<pb::GetTrialMetricsResponse>(self, "metrics", [=, &db] {
          pb::GetTrialMetricsResponse out;
          for (auto& m : db.trial_metrics(id.value, group, offset, limit)) *out.add_metrics() = std::move(m);
          return out;
        });
      },
      [=, &db](metrics_atom, trial_id id, int32_t limit) {
        return after_flush<pb::GetTrialMetricsResponse>(self, "metric groups", [=, &db] {
          pb::GetTrialMetricsResponse out;
          for (auto& m : db.latest_metrics_by_group(id.value, limit)) *out.add_metrics() = std::move(m);
          return out;
        });
      },
      [=, &db](series_atom, trial_id id, const std::string& group, const std::string& name, int64_t start,
               int64_t end, int32_t max_points) {
        return after_flush<pb::MetricSeries>(self, "a metric series", [=, &db] {
          return db.metric_series(id.value, group, name, start, end, max_points);
        });
      },
      [=, &db](series_atom, experiment_id id, const std::string& group, const std::string& name, int32_t max_points) {
        return after_flush<pb::ExperimentMetricSeries>(self, "metric series", [=, &db] {
          pb::ExperimentMetricSeries out;
          for (const auto& t : db.trials_of(id.value))
            *out.add_series() = db.metric_series(t.id(), group, name, 0, INT64_MAX, max_points);
          return out;
        });
      },
      [=, &db](census_atom) { return answer("the census", [&] { return db.stored_census(); }); },
      [=, &db](logs_atom, trial_id id, int64_t after, int32_t limit) {
        return after_flush<pb::TrialLogsResponse>(self, "logs", [=, &db] {
          pb::TrialLogsResponse out;
          for (auto& l : db.trial_logs(id.value, after, limit)) *out.add_logs() = std::move(l);
          return out;
        });
      },
      [=, &db](logs_atom, const std::string& task, int64_t after, int32_t limit) {
        return after_flush<pb::TaskLogsResponse>(self, "logs", [=, &db] {
          pb::TaskLogsResponse out;
          for (auto& l : db.task_logs(task, after, limit)) *out.add_logs() = std::move(l);
          return out;
        });
      },
      [=, &db](checkpoints_atom, experiment_id id) {
        return after_flush<pb::GetCheckpointsResponse>(self, "checkpoints", [=, &db] {
          return checkpoints_response<pb::GetCheckpointsResponse>(db.experiment_checkpoints(id.value));
        });
      },
      [=, &db](checkpoints_atom, trial_id id) {
        return after_flush<pb::GetCheckpointsResponse>(self, "checkpoints", [=, &db] {
          return checkpoints_response<pb::GetCheckpointsResponse>(db.trial_checkpoints(id.value));
        });
      },
      [=, &db](model_atom, experiment_id id) {
        return answer("a model definition", [&] { return db.model_definition(id.value); });
      },
      [=, &db](get_atom, const std::string& uuid) {
        return after_flush<pb::GetCheckpointResponse>(self, "a checkpoint", [=, &db] {
          pb::GetCheckpointResponse out;
          if (auto c = db.get_checkpoint(uuid)) *out.mutable_checkpoint() = std::move(*c);
          return out;
        });
      },
  };
}

} // namespace

persistence_reader_actor spawn_persistence_readers(caf::actor_system& sys, const std::string& conninfo,
                                                   const persistence_actor& writer, size_t count) {
  auto make_reader = [&sys, conninfo, writer] {
    // Detached: each blocks on its own connection.
    return caf::actor_cast<caf::actor>(sys.spawn<caf::detached>(reader_impl, conninfo, writer));
  };
  return caf::actor_cast<persistence_reader_actor>(
      caf::actor_pool::make(sys.dummy_execution_unit(), count, make_reader, caf::actor_pool::round_robin()));
}

} // namespace det
