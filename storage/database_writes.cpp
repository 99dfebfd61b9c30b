#include <algorithm>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "storage/database_impl.hpp"
#include "storage/binary_copy.hpp"
#include "storage/libpq_calls.hpp"
#include "messages/states.hpp"
#include "storage/json_maps.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

namespace {

// group is a keyword.
const std::string metric_columns = "trial_id, \"group\", total_batches, total_records, total_epochs, metrics, time";

// One metrics row in metric_columns' order.
void add_metric_row(binary_copy& rows, int64_t trial_id, const std::string& group, int64_t batches,
                    int64_t records, double epochs, const google::protobuf::Map<std::string, double>& metrics,
                    const google::protobuf::Timestamp& time) {
  rows.row(7);
  rows.int8(trial_id);
  rows.text(group);
  rows.int8(batches);
  rows.int8(records);
  rows.float8(epochs);
  rows.jsonb(metrics_to_json(metrics));
  rows.timestamptz(time);
}

// Everything but the terminal states, which a restarted master leaves alone.
std::string unfinished_state() {
  return "state NOT IN ('" + state_name(pb::STATE_CANCELED) + "', '" + state_name(pb::STATE_COMPLETED) + "', '" +
         state_name(pb::STATE_ERROR) + "')";
}

// One trial row, inside the caller's transaction.
int64_t insert_trial_in(pqxx::work& tx, const pb::Trial& trial) {
  return tx.exec_params1("INSERT INTO trials (experiment_id, request_id, state, hparams, seed, restarts, "
                         "target_batches, parent_trial_id, warm_start_checkpoint) VALUES ($1, $2, $3, $4, $5, "
                         "$6, $7, NULLIF($8, 0), NULLIF($9, '')::uuid) RETURNING id",
                         trial.experiment_id(), trial.request_id(), state_name(trial.state()),
                         trial.hparams().empty() ? std::string{"{}"} : trial.hparams(), trial.seed(),
                         trial.restarts(), trial.target_batches(), trial.parent_trial_id(),
                         trial.warm_start_checkpoint_uuid())[0]
      .as<int64_t>();
}

}  // namespace

int64_t database::insert_experiment(const pb::Experiment& experiment, const std::string& model_definition,
                                    std::vector<pb::Trial>* first_trials) {
  return describing_failure("store experiment " + experiment.name(), [&] {
    pqxx::work tx{impl_->connection};
    const auto id = tx.exec_params1(
                          "INSERT INTO experiments (name, description, state, config, searcher, metric, owner_id, parent_id, "
                          "project_id, smaller_is_better, labels) VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, 0), $9, "
                          "$10, ARRAY(SELECT DISTINCT jsonb_array_elements_text($11::jsonb))) RETURNING id",
                          experiment.name(), experiment.description(), state_name(experiment.state()),
                          experiment.config(), experiment.searcher(), experiment.metric(), experiment.owner_id(),
                          experiment.parent_id(),
                          experiment.project_id() == 0 ? default_project_id : experiment.project_id(),
                          experiment.smaller_is_better(),
                          nlohmann::json(std::vector<std::string>(experiment.labels().begin(),
                                                                  experiment.labels().end())).dump())[0]
                        .as<int64_t>();
    // In the same transaction: an experiment a restart restores always has its model and the
    // trials its search began with.
    if (!model_definition.empty())
      tx.exec_params("INSERT INTO model_definitions (experiment_id, archive) VALUES ($1, $2)", id,
                     pqxx::binarystring(model_definition));
    if (first_trials)
      for (auto& t : *first_trials) {
        t.set_experiment_id(id);
        t.set_id(insert_trial_in(tx, t));
      }
    tx.commit();
    return id;
  });
}

void database::set_experiment_scheduling(int64_t id, const pb::JobSettings& settings) {
  describing_failure("record the scheduling settings of experiment " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    // -1 stands for "unset": none of the three may be negative.
    expect_one_row(tx.exec_params("UPDATE experiments SET priority = COALESCE(NULLIF($2, -1), priority), "
                                  "weight = COALESCE(NULLIF($3, -1), weight), "
                                  "max_slots = COALESCE(NULLIF($4, -1), max_slots) WHERE id = $1",
                                  id, settings.has_priority() ? settings.priority() : -1,
                                  settings.has_weight() ? settings.weight() : -1.0,
                                  settings.has_max_slots() ? settings.max_slots() : -1),
                   "experiment " + std::to_string(id));
    tx.commit();
  });
}

void database::set_experiment_state(int64_t id, pb::State state, bool ended, double searcher_progress) {
  describing_failure("record the state of experiment " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE experiments SET state = $2, end_time = CASE WHEN $3 THEN now() "
                                  "ELSE end_time END, searcher_progress = CASE WHEN $4::float8 >= 0 THEN $4::float8 "
                                  "ELSE searcher_progress END WHERE id = $1",
                                  id, state_name(state), ended, searcher_progress),
                   "experiment " + std::to_string(id));
    tx.commit();
  });
}


int64_t database::insert_trial(const pb::Trial& trial) {
  return describing_failure("store a trial of experiment " + std::to_string(trial.experiment_id()), [&] {
    pqxx::work tx{impl_->connection};
    const auto id = insert_trial_in(tx, trial);
    tx.commit();
    return id;
  });
}

void database::update_trial(const pb::Trial& trial) {
  const auto id = trial.id();
  describing_failure("record the state of trial " + std::to_string(id), [&] {
    const bool ended = is_terminal(trial.state());
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE trials SET state = $2, end_time = CASE WHEN $3 THEN now() ELSE end_time "
                                  "END, exit_reason = COALESCE(NULLIF($4, ''), exit_reason), restarts = $5, "
                                  "searcher_stopped = searcher_stopped OR $6, rung = NULLIF($7, -1), runs = GREATEST(runs, $8), "
                                  "allocation_token = CASE WHEN $8 >= runs THEN $9 ELSE allocation_token END, "
                                  "outcome = CASE WHEN $10 THEN $11 ELSE outcome END WHERE id = $1",
                                  id, state_name(trial.state()), ended, trial.exit_reason(), trial.restarts(),
                                  trial.searcher_stopped(), trial.has_rung() ? trial.rung() : -1, trial.runs(),
                                  trial.allocation_token(), trial.outcome() != pb::WORKER_OUTCOME_UNSPECIFIED,
                                  outcome_name(trial.outcome())),
                   "trial " + std::to_string(id));
    tx.commit();
  });
}


namespace {

// A COPY is ended after this many rows: see append_metrics.
constexpr std::size_t rows_per_copy = 256;

// The UPDATE of the trials' summaries that ends a metric transaction when they are due: one for
// every trial (a statement per trial cost a round trip each), prepared once per connection (parsed
// and planned at every commit, it cost about 8 % of the rows stored per second in
// bench_metric_ingestion). A trial's latest metrics are replaced only by a summary of steps at
// least as high: the two metric writers' summaries of one trial may land in either order.
const std::string latest_metrics_statement = "det_latest_metrics";
const std::string latest_metrics_sql =
    "UPDATE trials t SET total_batches = GREATEST(t.total_batches, v.total_batches), "
    "latest_training = CASE WHEN v.training <> '' AND v.training_step >= t.stored_training_step "
    "THEN v.training::jsonb ELSE t.latest_training END, "
    "latest_validation = CASE WHEN v.validation <> '' AND v.validation_step >= t.stored_validation_step "
    "THEN v.validation::jsonb ELSE t.latest_validation END, "
    "stored_training_step = GREATEST(t.stored_training_step, v.training_step), "
    "stored_validation_step = GREATEST(t.stored_validation_step, v.validation_step) "
    "FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bigint[]) "
    "AS v(id, total_batches, training, validation, training_step, validation_step) WHERE t.id = v.id";

/// The prepared UPDATE's parameters for `summaries`.
std::vector<std::string> summary_params(const std::map<int64_t, trial_summary>& summaries) {
  std::vector<std::string> ids, batches, training, validation, training_steps, validation_steps;
  for (const auto& [trial_id, summary] : summaries) {
    ids.push_back(std::to_string(trial_id));
    batches.push_back(std::to_string(summary.total_batches));
    training.push_back(summary.training);  // "": none
    validation.push_back(summary.validation);
    training_steps.push_back(std::to_string(summary.training_step));
    validation_steps.push_back(std::to_string(summary.validation_step));
  }
  return {text_array_literal(ids),      text_array_literal(batches),        text_array_literal(training),
          text_array_literal(validation), text_array_literal(training_steps), text_array_literal(validation_steps)};
}

}  // namespace

::pg_conn* database::impl::metric_connection() {
  if (!libpq || !connected(libpq) || connection.backendpid() != libpq_backend) {
    libpq = libpq_handle(connection);
    prepare(libpq, latest_metrics_statement, latest_metrics_sql);
    libpq_backend = connection.backendpid();
  }
  return libpq;
}

open_metric_transaction::open_metric_transaction(::pg_conn* conn) : conn(conn) {}

open_metric_transaction::~open_metric_transaction() {
  rows.reset();  // abandons an unfinished COPY, which fails the transaction
  if (begun && !committed) {
    try {
      exec_statements(conn, "ROLLBACK");
    } catch (const std::exception&) {  // a broken connection: the server rolled back already
    }
  }
}

void open_metric_transaction::start_copy(const std::string& columns) {
  // Committed means visible and in PostgreSQL's WAL buffers, which its WAL writer flushes within a
  // fraction of a second: a crash of the master alone (PostgreSQL runs on) loses nothing committed,
  // and a reporter does not wait for a disk flush per report. A crash of PostgreSQL or its machine
  // can lose the last fraction of a second of acknowledged metrics.
  const bool first = !begun;
  begun = true;  // before the COPY: a refused COPY leaves the transaction begun, to roll back
  rows.emplace(conn, "metrics", columns, first ? "BEGIN; SET LOCAL synchronous_commit = off; " : "");
}

void open_metric_transaction::end_copy() {
  if (rows) {
    rows->complete();
    rows.reset();
  }
}

void open_metric_transaction::commit(const std::string& last_statement, const std::vector<std::string>& params) {
  end_copy();
  exec_prepared_then(conn, last_statement, params, "COMMIT");
  committed = true;
}

void open_metric_transaction::commit() {
  end_copy();
  exec_statements(conn, "COMMIT");
  committed = true;
}

void trial_summary::merge(trial_summary&& later) {
  total_batches = std::max(total_batches, later.total_batches);
  if (!later.training.empty()) training = std::move(later.training);
  if (!later.validation.empty()) validation = std::move(later.validation);
  training_step = std::max(training_step, later.training_step);
  validation_step = std::max(validation_step, later.validation_step);
}

void database::append_metrics(google::protobuf::RepeatedPtrField<pb::MetricReport>&& reports) {
  if (reports.empty() || !impl_->metrics_failure.empty()) return;
  try {
    if (!impl_->metrics) impl_->metrics = std::make_unique<open_metric_transaction>(impl_->metric_connection());
    auto& open = *impl_->metrics;
    const int first = open.appended.reports_size();
    auto& appended = *open.appended.mutable_reports();
    if (appended.empty()) {
      appended.Swap(&reports);
    } else {  // the reports change hands as pointers: no copy, no allocation per report
      std::vector<pb::MetricReport*> taken(static_cast<std::size_t>(reports.size()));
      reports.ExtractSubrange(0, reports.size(), taken.data());
      for (auto* r : taken) appended.AddAllocated(r);
    }
    if (!open.rows) open.start_copy(metric_columns);
    for (int i = first; i < appended.size(); ++i) {
      const auto& report = appended.Get(i);
      add_metric_row(*open.rows, report.trial_id(), report.group(), report.total_batches(), report.total_records(),
                     report.total_epochs(), report.metrics(), report.time());
      auto& trial = open.trials[report.trial_id()];
      if (report.group() == "training") {
        trial.training = &report;
        trial.training_step = std::max(trial.training_step, report.total_batches());
      }
      if (report.group() == "validation") {
        trial.validation = &report;
        trial.validation_step = std::max(trial.validation_step, report.total_batches());
      }
      trial.total_batches = std::max(trial.total_batches, report.total_batches());
    }
    // PostgreSQL inserts the rows of a COPY (heap and index) in groups of up to 1,000 or at its end:
    // a COPY that took every row until the commit would leave all of that to the commit, on
    // reporters' critical path. Ended every few hundred rows, the inserting happens as rows arrive.
    open.rows_in_copy += static_cast<std::size_t>(appended.size() - first);
    if (open.rows_in_copy >= rows_per_copy) {
      open.rows->complete();
      open.rows.reset();
      open.rows_in_copy = 0;
    } else {
      open.rows->send();
    }
  } catch (const std::exception& e) {
    impl_->metrics.reset();  // abandons the COPY and rolls the transaction back
    impl_->metrics_failure = without_newline(e.what());
  }
}

pb::MetricBatch database::commit_metrics(summary_timing timing) {
  auto open = std::move(impl_->metrics);
  const auto failure = std::exchange(impl_->metrics_failure, {});
  if (!failure.empty()) throw std::runtime_error("The database could not store metric reports: " + failure);
  const auto now = std::chrono::steady_clock::now();
  const bool due = timing == summary_timing::now || now - impl_->summaries_written >= impl_->summary_interval;
  auto& unwritten = impl_->unwritten_summaries;
  if (!open) {
    if (timing == summary_timing::now) write_kept_summaries();
    return {};
  }
  describing_failure("store " + std::to_string(open->appended.reports_size()) + " metric reports", [&] {
    // What this transaction's rows add to the summaries, taken in only once they are committed.
    std::map<int64_t, trial_summary> fresh;
    for (const auto& [trial_id, trial] : open->trials)
      fresh[trial_id] = {trial.total_batches, trial.training ? metrics_to_json(trial.training->metrics()) : "",
                         trial.validation ? metrics_to_json(trial.validation->metrics()) : "", trial.training_step,
                         trial.validation_step};
    if (!due) {
      open->commit();
      for (auto& [trial_id, summary] : fresh) unwritten[trial_id].merge(std::move(summary));
      return;
    }
    auto summaries = unwritten;  // the rows of a failed commit must not count
    for (auto& [trial_id, summary] : fresh) summaries[trial_id].merge(std::move(summary));
    open->commit(latest_metrics_statement, summary_params(summaries));
    unwritten.clear();
    impl_->summaries_written = now;
  });
  return std::move(open->appended);
}

void database::write_kept_summaries() {
  auto& unwritten = impl_->unwritten_summaries;
  if (impl_->metrics || unwritten.empty()) return;
  describing_failure("store the metric summaries of " + std::to_string(unwritten.size()) + " trials", [&] {
    open_metric_transaction summaries{impl_->metric_connection()};
    summaries.begun = true;  // before: a refused SET LOCAL leaves the transaction begun, to roll back
    exec_statements(summaries.conn, "BEGIN; SET LOCAL synchronous_commit = off");
    summaries.commit(latest_metrics_statement, summary_params(unwritten));
    unwritten.clear();
    impl_->summaries_written = std::chrono::steady_clock::now();
  });
}

bool database::keeps_summaries() const { return !impl_->unwritten_summaries.empty(); }

void database::set_summary_interval(std::chrono::milliseconds interval) { impl_->summary_interval = interval; }

void database::write_metrics(const google::protobuf::RepeatedPtrField<pb::MetricReport>& reports) {
  append_metrics(google::protobuf::RepeatedPtrField<pb::MetricReport>{reports});
  commit_metrics(summary_timing::now);
}

void database::write_logs(const std::vector<pb::LogEntry>& entries) {
  if (entries.empty()) return;
  describing_failure("store " + std::to_string(entries.size()) + " log lines", [&] {
    pqxx::work tx{impl_->connection};
    pqxx::stream_to copy{tx, "task_logs",
                         std::vector<std::string>{"trial_id", "task_id", "allocation_id", "agent_id", "stream", "text",
                                                  "time"}};
    for (const auto& entry : entries)
      copy << std::make_tuple(entry.trial_id(), entry.task_id(), entry.allocation_id(), entry.agent_id(),
                              entry.stream(), entry.text(), sql_time_or_now(entry.time()));
    copy.complete();
    tx.commit();
  });
}

void database::upsert_agent(const pb::Agent& agent) {
  describing_failure("store agent " + agent.id(), [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params(
        "INSERT INTO agents (id, hostname, resource_pool, slots, version, connected, registered_time) "
        "VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7) "
        "ON CONFLICT (id) DO UPDATE SET hostname = EXCLUDED.hostname, resource_pool = EXCLUDED.resource_pool, "
        "slots = EXCLUDED.slots, version = EXCLUDED.version, connected = EXCLUDED.connected, "
        "registered_time = EXCLUDED.registered_time",
        agent.id(), agent.hostname(), agent.resource_pool(), slots_to_json(agent.slots()), agent.version(),
        agent.connected(), sql_time_or_now(agent.registered_time()));
    tx.commit();
  });
}

void database::set_agent_connected(const std::string& id, bool connected) {
  describing_failure("record whether agent " + id + " is connected", [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE agents SET connected = $2 WHERE id = $1", id, connected), "agent " + id);
    tx.commit();
  });
}

void database::save_snapshot(int64_t experiment_id, const std::string& snapshot) {
  describing_failure("save the searcher snapshot of experiment " + std::to_string(experiment_id), [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params("INSERT INTO experiment_snapshots (experiment_id, snapshot) VALUES ($1, $2) "
                   "ON CONFLICT (experiment_id) DO UPDATE SET snapshot = EXCLUDED.snapshot, updated_at = now()",
                   experiment_id, pqxx::binarystring(snapshot));
    tx.commit();
  });
}

void database::copy_raw_metrics(const std::vector<int64_t>& trial_ids, int64_t rows, int64_t batch) {
  describing_failure("copy " + std::to_string(rows) + " synthetic metric rows", [&] {
    pqxx::work tx{impl_->connection};
    binary_copy copy{tx, "metrics", metric_columns};
    const std::string group = "training";
    google::protobuf::Timestamp time;
    time.set_seconds(unix_micros_or_now({}) / 1000000);
    google::protobuf::Map<std::string, double> metrics;
    std::vector<int64_t> batches(trial_ids.size(), 0);
    for (int64_t row = 0; row < rows; ++row) {
      const auto trial = static_cast<std::size_t>(row / batch) % trial_ids.size();
      const int64_t n = ++batches[trial];
      metrics["loss"] = 1.0 / double(n);
      add_metric_row(copy, trial_ids[trial], group, n, n * 32, double(n) / 1000.0, metrics, time);
    }
    copy.complete();
    tx.commit();
  });
}

}  // namespace det::storage

namespace det::storage {

void database::annotate_experiment(int64_t id, const pb::PatchExperimentRequest& change) {
  describing_failure("record what was written about experiment " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    // NULL keeps a field: only what the change sets is written.
    expect_one_row(tx.exec_params("UPDATE experiments SET name = COALESCE($2, name), description = COALESCE($3, description), "
                                  "notes = COALESCE($4, notes) WHERE id = $1",
                                  id, text_or_null(change.has_name(), change.name()),
                                  text_or_null(change.has_description(), change.description()),
                                  text_or_null(change.has_notes(), change.notes())),
                   "experiment " + std::to_string(id));
    tx.commit();
  });
}

void database::add_experiment_label(int64_t id, const std::string& label) {
  describing_failure("label experiment " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE experiments SET labels = CASE WHEN $2 = ANY(labels) THEN labels "
                                  "ELSE array_append(labels, $2) END WHERE id = $1",
                                  id, label),
                   "experiment " + std::to_string(id));
    tx.commit();
  });
}

void database::remove_experiment_label(int64_t id, const std::string& label) {
  describing_failure("remove a label of experiment " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE experiments SET labels = array_remove(labels, $2) WHERE id = $1", id, label),
                   "experiment " + std::to_string(id));
    tx.commit();
  });
}

bool database::set_experiment_archived(int64_t id, bool archived) {
  return describing_failure("archive experiment " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    auto result = tx.exec_params("UPDATE experiments SET archived = $2 WHERE id = $1 AND NOT " + unfinished_state(), id,
                                 archived);
    tx.commit();
    return result.affected_rows() == 1;
  });
}

}  // namespace det::storage
