#include "storage/database_impl.hpp"

#include <map>
#include "storage/json_maps.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

namespace {

// A list leaves each experiment's config out (it is most of a row's bytes; GET .../experiments/N
// has it), as Determined's lists do.
enum class config_column { included, left_out };

std::string experiment_select_with(config_column config) {
  return "SELECT e.id, e.name, e.description, e.state, " +
         std::string{config == config_column::included ? "e.config" : "''"} + ", " + micros_of("e.start_time") + ", " +
    micros_of("e.end_time") +
    ", e.searcher, e.metric, (SELECT count(*) FROM trials t WHERE t.experiment_id = e.id), e.priority, e.weight, "
    "e.max_slots, e.owner_id, u.username, e.labels, e.notes, e.archived, COALESCE(e.parent_id, 0), e.project_id, "
    "w.name || '/' || p.name, e.smaller_is_better, COALESCE(e.searcher_progress, s.progress), s.best "
    "FROM experiments e JOIN users u ON u.id = e.owner_id JOIN projects p ON p.id = e.project_id "
    "JOIN workspaces w ON w.id = p.workspace_id "
    // What lists show of its trials: progress in batches and the best latest value of the metric.
    "LEFT JOIN LATERAL (SELECT COALESCE(sum(LEAST(t.total_batches, t.target_batches))::float8 / "
    "NULLIF(sum(t.target_batches), 0), 0) AS progress, CASE WHEN e.smaller_is_better "
    "THEN min((t.latest_validation ->> e.metric)::float8) ELSE max((t.latest_validation ->> e.metric)::float8) END "
    "AS best FROM trials t WHERE t.experiment_id = e.id) s ON true ";
}

const std::string experiment_select = experiment_select_with(config_column::included);

pb::Experiment experiment_from(const pqxx::row& row) {
  pb::Experiment experiment;
  experiment.set_id(row[0].as<int64_t>());
  experiment.set_name(row[1].as<std::string>());
  experiment.set_description(row[2].as<std::string>());
  experiment.set_state(parse_state(row[3].as<std::string>()));
  experiment.set_config(row[4].as<std::string>());
  if (auto time = time_from(row[5])) *experiment.mutable_start_time() = *time;
  if (auto time = time_from(row[6])) *experiment.mutable_end_time() = *time;
  experiment.set_searcher(row[7].as<std::string>());
  experiment.set_metric(row[8].as<std::string>());
  experiment.set_num_trials(row[9].as<int32_t>());
  auto& scheduling = *experiment.mutable_scheduling();
  if (!row[10].is_null()) scheduling.set_priority(row[10].as<int32_t>());
  if (!row[11].is_null()) scheduling.set_weight(row[11].as<double>());
  if (!row[12].is_null()) scheduling.set_max_slots(row[12].as<int32_t>());
  experiment.set_owner_id(row[13].as<int64_t>());
  experiment.set_owner(row[14].as<std::string>());
  text_array_from(row[15], experiment.mutable_labels());
  experiment.set_notes(row[16].as<std::string>());
  experiment.set_archived(row[17].as<bool>());
  experiment.set_parent_id(row[18].as<int64_t>());
  experiment.set_project_id(row[19].as<int64_t>());
  experiment.set_project(row[20].as<std::string>());
  experiment.set_smaller_is_better(row[21].as<bool>());
  experiment.set_progress(row[22].as<double>());
  if (!row[23].is_null()) experiment.set_best_metric(row[23].as<double>());
  return experiment;
}

// What trial_from reads, in its order.
const std::string trial_columns =
    "id, experiment_id, request_id, state, hparams, seed, restarts, " + micros_of("start_time") + ", " +
    micros_of("end_time") +
    ", total_batches, target_batches, latest_training::text, latest_validation::text, exit_reason, "
    "searcher_stopped, rung, COALESCE(parent_trial_id, 0), COALESCE(warm_start_checkpoint::text, ''), "
    "COALESCE((SELECT c.uuid::text FROM checkpoints c WHERE c.trial_id = trials.id AND c.state = 'COMPLETED' "
    "ORDER BY c.steps_completed DESC, c.report_time DESC LIMIT 1), ''), runs, "
    "(SELECT u.username FROM experiments e JOIN users u ON u.id = e.owner_id WHERE e.id = trials.experiment_id), "
    "outcome";
const std::string trial_select = "SELECT " + trial_columns + " FROM trials ";

pb::Trial trial_from(const pqxx::row& row) {
  pb::Trial trial;
  trial.set_id(row[0].as<int64_t>());
  trial.set_experiment_id(row[1].as<int64_t>());
  trial.set_request_id(row[2].as<int64_t>());
  trial.set_state(parse_state(row[3].as<std::string>()));
  trial.set_hparams(row[4].as<std::string>());
  trial.set_seed(row[5].as<int64_t>());
  trial.set_restarts(row[6].as<int32_t>());
  if (auto time = time_from(row[7])) *trial.mutable_start_time() = *time;
  if (auto time = time_from(row[8])) *trial.mutable_end_time() = *time;
  trial.set_total_batches(row[9].as<int64_t>());
  trial.set_target_batches(row[10].as<int64_t>());
  metrics_from_json(row[11].as<std::string>(), trial.mutable_latest_training());
  metrics_from_json(row[12].as<std::string>(), trial.mutable_latest_validation());
  trial.set_exit_reason(row[13].as<std::string>());
  trial.set_searcher_stopped(row[14].as<bool>());
  if (!row[15].is_null()) trial.set_rung(row[15].as<int32_t>());
  trial.set_parent_trial_id(row[16].as<int64_t>());
  trial.set_warm_start_checkpoint_uuid(row[17].as<std::string>());
  trial.set_latest_checkpoint_uuid(row[18].as<std::string>());
  trial.set_runs(row[19].as<int32_t>());
  trial.set_owner(row[20].as<std::string>());
  trial.set_outcome(parse_outcome(row[21].as<std::string>()));
  return trial;
}

}  // namespace

namespace {

// The ORDER BY of a filter's sort_by (validated by the gateway; anything else sorts by id).
std::string order_of(const pb::ExperimentFilter& filter) {
  static const std::map<std::string, std::string> columns{{"name", "e.name"},        {"state", "e.state"},
                                                          {"start_time", "e.start_time"}, {"end_time", "e.end_time"},
                                                          {"owner", "u.username"}};
  auto it = columns.find(filter.sort_by());
  const std::string direction = filter.descending() ? " DESC" : " ASC";
  return "ORDER BY " + (it == columns.end() ? std::string{} : it->second + direction + ", ") + "e.id" + direction;
}

// The filter's states as "STATE_A,STATE_B" ("" for any).
std::string states_text(const pb::ExperimentFilter& filter) {
  std::string text;
  for (int s : filter.states()) text += (text.empty() ? "" : ",") + state_name(static_cast<pb::State>(s));
  return text;
}

}  // namespace

namespace {

// The WHERE clause of a filter, its values in $1 to $5 in the order run_filtered passes them.
const std::string filter_where =
    "WHERE ($1 = '' OR u.username = $1) AND ($2 = '' OR $2 = ANY(e.labels)) "
    "AND ($3 = '' OR e.state = ANY(string_to_array($3, ','))) "
    "AND ($4 = 2 OR e.archived = ($4 = 1)) AND ($5::bigint = 0 OR e.project_id = $5::bigint) ";

/// Runs `query` with `filter_where`'s values, then `more`.
template <class... More>
auto run_filtered(pqxx::transaction_base& tx, const std::string& query, const pb::ExperimentFilter& filter,
                   More... more) {
  return tx.exec_params(query, filter.user(), filter.label(), states_text(filter), static_cast<int>(filter.archived()),
                        filter.project_id(), more...);
}

}  // namespace

std::vector<pb::Experiment> database::list_experiments(int64_t offset, int32_t limit, const pb::ExperimentFilter& filter) {
  return describing_failure("list the experiments", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::Experiment> experiments;
    static const std::string listed = experiment_select_with(config_column::left_out);
    for (const auto& row : run_filtered(tx, listed + filter_where + order_of(filter) + " OFFSET $6 LIMIT $7", filter,
                                         offset, limit))
      experiments.push_back(experiment_from(row));
    return experiments;
  });
}

int64_t database::count_experiments(const pb::ExperimentFilter& filter) {
  return describing_failure("count the experiments", [&] {
    pqxx::read_transaction tx{impl_->connection};
    return run_filtered(tx, "SELECT count(*) FROM experiments e JOIN users u ON u.id = e.owner_id " + filter_where,
                         filter)[0][0]
        .as<int64_t>();
  });
}

std::optional<pb::Experiment> database::get_experiment(int64_t id) {
  return describing_failure("read experiment " + std::to_string(id), [&]() -> std::optional<pb::Experiment> {
    pqxx::read_transaction tx{impl_->connection};
    const auto rows = tx.exec_params(experiment_select + "WHERE e.id = $1", id);
    if (rows.empty()) return std::nullopt;
    return experiment_from(rows[0]);
  });
}

std::vector<pb::Trial> database::trials_of(int64_t experiment_id) {
  return describing_failure("list the trials of experiment " + std::to_string(experiment_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::Trial> trials;
    for (const auto& row : tx.exec_params(trial_select + "WHERE experiment_id = $1 ORDER BY id", experiment_id))
      trials.push_back(trial_from(row));
    return trials;
  });
}

std::vector<database::restorable_experiment> database::restorable_experiments() {
  return describing_failure("read the experiments to restore", [&] {
    // Four queries for any number of experiments, each row matched to its experiment by id: a
    // restart with 10,000 unfinished experiments made 50,000 round trips.
    const std::string terminal = "('" + state_name(pb::STATE_CANCELED) + "', '" + state_name(pb::STATE_COMPLETED) +
                                 "', '" + state_name(pb::STATE_ERROR) + "')";
    std::vector<restorable_experiment> out;
    std::map<int64_t, std::size_t> index;  // experiment id -> its place in `out`
    pqxx::work tx{impl_->connection};
    for (const auto& row : tx.exec(experiment_select + "WHERE e.state NOT IN " + terminal + " ORDER BY e.id")) {
      restorable_experiment r;
      r.experiment = experiment_from(row);
      index[r.experiment.id()] = out.size();
      out.push_back(std::move(r));
    }
    // The ids just read, as a PostgreSQL array: the later queries read the rows of these only.
    std::string ids = "{";
    for (const auto& [id, place] : index) ids += (ids.size() > 1 ? "," : "") + std::to_string(id);
    ids += "}";
    const auto rows_of = [&](const std::string& query) { return tx.exec_params(query, ids); };
    auto of = [&](const pqxx::field& experiment_id) -> restorable_experiment& {
      return out[index.at(experiment_id.as<int64_t>())];
    };
    for (const auto& row : rows_of("SELECT experiment_id, snapshot FROM experiment_snapshots "
                                   "WHERE experiment_id = ANY($1::bigint[])"))
      of(row[0]).snapshot = pqxx::binarystring(row[1]).str();
    for (const auto& row : rows_of("SELECT experiment_id, archive FROM model_definitions "
                                   "WHERE experiment_id = ANY($1::bigint[])"))
      of(row[0]).model_definition = pqxx::binarystring(row[1]).str();
    // A master that ended between a metric commit and the next summary left its trials' summaries
    // short of their rows (summary_timing): each is brought up to its rows beyond it, found with
    // a probe of metrics_trial_batches (metrics_validation_batches for validation) per group,
    // before anything reads it.
    rows_of("UPDATE trials t SET "
            "total_batches = GREATEST(t.total_batches, COALESCE((SELECT max(m.total_batches) FROM metrics m "
            "WHERE m.trial_id = t.id AND m.total_batches > t.total_batches), 0)), "
            "stored_training_step = COALESCE(tr.total_batches, t.stored_training_step), "
            "latest_training = COALESCE(tr.metrics, t.latest_training), "
            "stored_validation_step = COALESCE(va.total_batches, t.stored_validation_step), "
            "latest_validation = COALESCE(va.metrics, t.latest_validation) "
            "FROM trials x "
            "LEFT JOIN LATERAL (SELECT m.total_batches, m.metrics FROM metrics m WHERE m.trial_id = x.id AND "
            "m.total_batches > x.stored_training_step AND m.\"group\" = 'training' ORDER BY m.total_batches DESC, "
            "m.time DESC LIMIT 1) tr ON true "
            "LEFT JOIN LATERAL (SELECT m.total_batches, m.metrics FROM metrics m WHERE m.trial_id = x.id AND "
            "m.total_batches > x.stored_validation_step AND m.\"group\" = 'validation' ORDER BY m.total_batches "
            "DESC, m.time DESC LIMIT 1) va ON true "
            "WHERE t.id = x.id AND x.experiment_id = ANY($1::bigint[]) AND "
            "(tr.total_batches IS NOT NULL OR va.total_batches IS NOT NULL OR EXISTS (SELECT 1 FROM metrics m "
            "WHERE m.trial_id = x.id AND m.total_batches > x.total_batches))");
    // Each trial with what only a restore needs: the token (kept from trial reads, which serve the
    // REST API) and the highest training and validation step it stored.
    for (const auto& row : rows_of("SELECT " + trial_columns +
                                   ", allocation_token, stored_training_step, stored_validation_step FROM trials "
                                   "WHERE experiment_id = ANY($1::bigint[]) ORDER BY experiment_id, id")) {
      auto& t = of(row[1]).trials.emplace_back(trial_from(row));
      t.set_allocation_token(row[22].as<std::string>());
      t.set_stored_training_step(row[23].as<int64_t>());
      t.set_stored_validation_step(row[24].as<int64_t>());
    }
    tx.commit();
    return out;
  });
}

std::optional<pb::Trial> database::get_trial(int64_t id) {
  return describing_failure("read trial " + std::to_string(id), [&]() -> std::optional<pb::Trial> {
    pqxx::read_transaction tx{impl_->connection};
    const auto rows = tx.exec_params(trial_select + "WHERE id = $1", id);
    if (rows.empty()) return std::nullopt;
    return trial_from(rows[0]);
  });
}

namespace {

// One row of (group, total_batches, total_records, total_epochs, metrics, time) as a report.
pb::MetricReport metric_report_of(const pqxx::row& row, int64_t trial_id) {
  pb::MetricReport report;
  report.set_trial_id(trial_id);
  report.set_group(row[0].as<std::string>());
  report.set_total_batches(row[1].as<int64_t>());
  report.set_total_records(row[2].as<int64_t>());
  report.set_total_epochs(row[3].as<double>());
  metrics_from_json(row[4].as<std::string>(), report.mutable_metrics());
  if (auto time = time_from(row[5])) *report.mutable_time() = *time;
  return report;
}

} // namespace

std::vector<pb::MetricReport> database::trial_metrics(int64_t trial_id, const std::string& group, int64_t offset,
                                                      int32_t limit) {
  return describing_failure("read the metrics of trial " + std::to_string(trial_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::MetricReport> reports;
    const auto rows = tx.exec_params(
        "SELECT \"group\", total_batches, total_records, total_epochs, metrics::text, " + micros_of("time") +
            " FROM metrics WHERE trial_id = $1 AND ($2 = '' OR \"group\" = $2) ORDER BY total_batches, time "
            "OFFSET $3 LIMIT $4",
        trial_id, group, offset, limit);
    for (const auto& row : rows) reports.push_back(metric_report_of(row, trial_id));
    return reports;
  });
}

std::vector<pb::MetricReport> database::latest_metrics_by_group(int64_t trial_id, int32_t limit) {
  return describing_failure("read the metric groups of trial " + std::to_string(trial_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::MetricReport> reports;
    const auto rows = tx.exec_params(
        "SELECT DISTINCT ON (\"group\") \"group\", total_batches, total_records, total_epochs, metrics::text, " +
            micros_of("time") +
            " FROM metrics WHERE trial_id = $1 ORDER BY \"group\", total_batches DESC, time DESC LIMIT $2",
        trial_id, limit);
    for (const auto& row : rows) reports.push_back(metric_report_of(row, trial_id));
    return reports;
  });
}

std::string log_columns() { return "id, allocation_id, agent_id, stream, text, " + micros_of("time"); }

pb::LogEntry log_entry_from(const pqxx::row& row) {
  pb::LogEntry entry;
  entry.set_id(row[0].as<int64_t>());
  entry.set_allocation_id(row[1].as<std::string>());
  entry.set_agent_id(row[2].as<std::string>());
  entry.set_stream(row[3].as<std::string>());
  entry.set_text(row[4].as<std::string>());
  if (auto time = time_from(row[5])) *entry.mutable_time() = *time;
  return entry;
}

std::vector<pb::LogEntry> database::trial_logs(int64_t trial_id, int64_t after_id, int limit) {
  return describing_failure("read the logs of trial " + std::to_string(trial_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::LogEntry> entries;
    const auto rows = tx.exec_params("SELECT " + log_columns() +
                                         " FROM task_logs WHERE trial_id = $1 AND id > $2 ORDER BY id LIMIT $3",
                                     trial_id, after_id, limit);
    for (const auto& row : rows) {
      entries.push_back(log_entry_from(row));
      entries.back().set_trial_id(trial_id);
    }
    return entries;
  });
}

std::vector<pb::Agent> database::list_agents() {
  return describing_failure("list the agents", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::Agent> agents;
    const auto rows = tx.exec("SELECT id, hostname, resource_pool, slots::text, version, connected, " +
                              micros_of("registered_time") + " FROM agents ORDER BY id");
    for (const auto& row : rows) {
      auto& agent = agents.emplace_back();
      agent.set_id(row[0].as<std::string>());
      agent.set_hostname(row[1].as<std::string>());
      agent.set_resource_pool(row[2].as<std::string>());
      slots_from_json(row[3].as<std::string>(), agent.mutable_slots());
      agent.set_version(row[4].as<std::string>());
      agent.set_connected(row[5].as<bool>());
      if (auto time = time_from(row[6])) *agent.mutable_registered_time() = *time;
    }
    return agents;
  });
}

}  // namespace det::storage
