#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/cluster.pb.h"
#include "messages/common.pb.h"
#include "messages/trial.pb.h"

namespace det::storage {

/// The only code that talks to PostgreSQL; owned by the persistence actor, one connection, not thread-safe.
/// Failures throw std::runtime_error whose message says what could not be done and why.
class database {
 public:
  /// Throws with a sentence if it cannot connect.
  explicit database(const std::string& conninfo);
  ~database();
  database(const database&) = delete;
  database& operator=(const database&) = delete;

  /// Applies the embedded storage/migrations not yet recorded in schema_migrations, in name order, each in its
  /// own transaction. Returns the names newly applied (empty when the schema is current).
  std::vector<std::string> migrate();

  /// Stores name, description, state, config, searcher and metric with start_time = now, the model
  /// directory (tar archive) submitted with it unless empty, and `first_trials` unless null (their
  /// experiment_id and id are set), in one transaction; returns the new id.
  int64_t insert_experiment(const pb::Experiment&, const std::string& model_definition = {},
                            std::vector<pb::Trial>* first_trials = nullptr);
  /// ended sets end_time = now.
  void set_experiment_state(int64_t id, pb::State, bool ended);
  /// Records the scheduling settings set since submission (what `settings` leaves unset stays).
  void set_experiment_scheduling(int64_t id, const pb::JobSettings& settings);

  /// Stores experiment_id, request_id, state, hparams, seed, restarts and target_batches with start_time = now;
  /// returns the new id.
  int64_t insert_trial(const pb::Trial&);
  /// ended sets end_time = now; an empty exit_reason keeps the one stored.
  /// Writes a trial's state, restarts, searcher_stopped and rung in one statement; a terminal state sets
  /// end_time = now; an empty exit_reason keeps the stored one; searcher_stopped is never unset.
  void update_trial(const pb::Trial& trial);

  /// One COPY of all reports, then one UPDATE per distinct trial: latest_training / latest_validation become the
  /// last report of that group in the batch, total_batches the largest seen so far.
  void write_metrics(const std::vector<pb::MetricReport>&);
  /// One COPY; ids are assigned by the database. An unset time means now.
  void write_logs(const std::vector<pb::LogEntry>&);

  /// Inserts or replaces the agent (registered_time = now when unset).
  void upsert_agent(const pb::Agent&);
  void set_agent_connected(const std::string& id, bool connected);

  /// Rows that are not to be paged: every one.
  static constexpr int32_t all_rows = INT32_MAX;

  /// Ordered by id, with num_trials; the page of at most `limit` after the first `offset`.
  std::vector<pb::Experiment> list_experiments(int64_t offset = 0, int32_t limit = all_rows);
  std::optional<pb::Experiment> get_experiment(int64_t id);
  /// Ordered by id.
  std::vector<pb::Trial> trials_of(int64_t experiment_id);
  std::optional<pb::Trial> get_trial(int64_t id);
  /// group "" means all groups; ordered by total_batches, then time; the page of at most `limit`
  /// after the first `offset`.
  std::vector<pb::MetricReport> trial_metrics(int64_t trial_id, const std::string& group, int64_t offset = 0,
                                              int32_t limit = all_rows);
  /// Entries with id > after_id, ids ascending, at most limit.
  std::vector<pb::LogEntry> trial_logs(int64_t trial_id, int64_t after_id, int limit);
  /// Ordered by id.
  std::vector<pb::Agent> list_agents();

  /// Stores the latest searcher snapshot (serialized bytes) of an experiment.
  void save_snapshot(int64_t experiment_id, const std::string& snapshot);
  /// Every unfinished experiment, for the master to restore.
  struct restorable_experiment {
    pb::Experiment experiment;
    std::string snapshot;  // empty if the master stopped before its first one was saved
    std::string model_definition;  // tar archive; empty for none
    std::vector<pb::Trial> trials;
  };
  std::vector<restorable_experiment> restorable_experiments();

  /// Records a completed checkpoint (state COMPLETED, report_time now). Recording it again (a
  /// resend) changes nothing; a uuid that names another checkpoint throws.
  void insert_checkpoint(const pb::Checkpoint&);
  /// Every checkpoint of the experiment's trials, DELETED ones too, by trial and steps, each with the
  /// metrics of the validation reported at its steps (if any).
  std::vector<pb::Checkpoint> experiment_checkpoints(int64_t experiment_id);
  std::vector<pb::Checkpoint> trial_checkpoints(int64_t trial_id);
  std::optional<pb::Checkpoint> get_checkpoint(const std::string& uuid);
  /// The checkpoints some trial started from, which GC keeps.
  std::set<std::string> warm_start_checkpoints();
  void mark_checkpoint_deleted(const std::string& uuid);

  /// The ingestion benchmark's baseline: one raw COPY of `rows` synthetic "training" rows for the trial
  /// (total_batches 1..rows, metrics {"loss": ...}), with no per-trial UPDATE.
  void copy_raw_metrics(int64_t trial_id, int64_t rows);


 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace det::storage
