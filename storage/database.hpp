#pragma once
// The database class: every statement det sends to PostgreSQL.

#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/api.pb.h"
#include "messages/cluster.pb.h"
#include "messages/common.pb.h"
#include "messages/trial.pb.h"
#include "storage/metric_summaries.hpp"
#include "storage/stored_rows.hpp"

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
  /// `searcher_progress` (0 to 1) is kept for a search without a length, whose trials report it;
  /// a negative one leaves what is stored.
  void set_experiment_state(int64_t id, pb::State, bool ended, double searcher_progress = -1);
  /// Records the scheduling settings set since submission (what `settings` leaves unset stays).
  void set_experiment_scheduling(int64_t id, const pb::JobSettings& settings);

  /// Stores experiment_id, request_id, state, hparams, seed, restarts and target_batches with start_time = now;
  /// returns the new id.
  int64_t insert_trial(const pb::Trial&);
  /// Writes a trial's state, restarts, searcher_stopped and rung in one statement; a terminal state sets
  /// end_time = now; an empty exit_reason keeps the stored one; searcher_stopped is never unset.
  void update_trial(const pb::Trial& trial);

  /// Streams reports into this connection's open metric transaction, which the first begins with a
  /// COPY, until commit_metrics. Throws nothing: a failure is kept for commit_metrics to throw, so
  /// the reports of one transaction land all or none.
  void append_metrics(google::protobuf::RepeatedPtrField<pb::MetricReport>&& reports);
  /// Ends the COPY and commits. The trials' summaries (latest_training / latest_validation become a
  /// trial's last committed report of that group, total_batches and the stored steps the largest
  /// seen so far) are written with the commit when `timing` says now or they are due, and kept
  /// for a later commit otherwise. Returns the reports committed; none when nothing was appended
  /// (a summary kept is still written when `timing` says now).
  pb::MetricBatch commit_metrics(summary_timing timing);
  /// Writes the summaries that commits kept (summary_timing::when_due), unless reports are being
  /// appended: their commit will write them.
  void write_kept_summaries();
  /// Whether commits kept summaries that are not yet written.
  bool keeps_summaries() const;
  /// How long the trials' summaries may trail their committed metrics (summary_timing::when_due);
  /// summary_interval unless set.
  void set_summary_interval(std::chrono::milliseconds interval);
  /// append_metrics and commit_metrics(summary_timing::now) of a copy of `reports`.
  void write_metrics(const google::protobuf::RepeatedPtrField<pb::MetricReport>&);
  /// One COPY; ids are assigned by the database. An unset time means now.
  void write_logs(const std::vector<pb::LogEntry>&);

  /// Inserts or replaces the agent (registered_time = now when unset).
  void upsert_agent(const pb::Agent&);
  void set_agent_connected(const std::string& id, bool connected);

  /// Rows that are not to be paged: every one.
  static constexpr int32_t all_rows = INT32_MAX;

  /// With num_trials and without their configs, those `filter` lets through in its order (by id unless it says otherwise);
  /// the page of at most `limit` after the first `offset`.
  std::vector<pb::Experiment> list_experiments(int64_t offset = 0, int32_t limit = all_rows,
                                               const pb::ExperimentFilter& filter = {});
  /// How many experiments `filter` lets through (a list's total, for paging).
  int64_t count_experiments(const pb::ExperimentFilter& filter);
  /// What people write about an experiment: each field `change` sets. Throws if there is no such experiment.
  void annotate_experiment(int64_t id, const pb::PatchExperimentRequest& change);
  /// Adds `label` unless it has it; removes it if it has it.
  void add_experiment_label(int64_t id, const std::string& label);
  void remove_experiment_label(int64_t id, const std::string& label);
  /// False, changing nothing, while the experiment has not ended.
  bool set_experiment_archived(int64_t id, bool archived);
  std::optional<pb::Experiment> get_experiment(int64_t id);
  /// Ordered by id.
  std::vector<pb::Trial> trials_of(int64_t experiment_id);
  std::optional<pb::Trial> get_trial(int64_t id);
  /// group "" means all groups; ordered by total_batches, then time; the page of at most `limit`
  /// after the first `offset`.
  std::vector<pb::MetricReport> trial_metrics(int64_t trial_id, const std::string& group, int64_t offset = 0,
                                              int32_t limit = all_rows);
  /// The latest report (highest total_batches, then time) of each of the trial's metric groups,
  /// ordered by group; at most `limit` groups.
  std::vector<pb::MetricReport> latest_metrics_by_group(int64_t trial_id, int32_t limit);
  /// Metric `name` of `group` at total_batches in [start_batches, end_batches], as columns: every
  /// report when at most `max_points` have it, else the smallest and largest value of each of
  /// max_points / 2 buckets of equal width in batches (database_series.cpp).
  pb::MetricSeries metric_series(int64_t trial_id, const std::string& group, const std::string& name,
                                 int64_t start_batches, int64_t end_batches, int32_t max_points);
  /// Experiments and trials by state, unfinished experiments' labels and trials (for Prometheus).
  pb::StoredCensus stored_census();
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
  /// The checkpoints some trial started from or a model version points at, which GC keeps.
  std::set<std::string> checkpoints_gc_keeps();
  void mark_checkpoint_deleted(const std::string& uuid);

  /// Users and tokens (storage/database_accounts.cpp). Passwords arrive hashed, tokens as their SHA-256.
  std::optional<stored_user> find_user(const std::string& username);
  std::optional<stored_user> get_user(int64_t id);
  std::vector<pb::User> list_users();
  /// nullopt when the name is taken.
  std::optional<pb::User> insert_user(const std::string& username, const std::string& password_hash, bool admin);
  /// Also revokes every session and token of the user: whoever knew the old password may have made them.
  void set_password_hash(int64_t user_id, const std::string& password_hash);
  void set_user_active(int64_t user_id, bool active);
  /// Links the user to the Unix identity its work runs as on agents (already checked).
  void set_agent_user_group(int64_t user_id, const pb::AgentUserGroup& link);
  /// Gives `admin` its first password; false when it already has one (not the first start).
  bool set_admin_password_if_unset(const std::string& password_hash);
  pb::AccessToken insert_token(int64_t user_id, const std::string& sha256, pb::TokenKind kind,
                               const std::string& description, int64_t lifespan_s);
  /// Expired and revoked tokens too: the caller says why they no longer work.
  std::optional<token_holder> find_token(const std::string& sha256);
  std::optional<pb::AccessToken> get_token(int64_t id);
  /// Access and task tokens (not sessions) of `user_id`, or of everyone for 0; by id.
  std::vector<pb::AccessToken> list_access_tokens(int64_t user_id);
  void revoke_token(int64_t id);
  /// Revokes the user's tokens that `description` describes (a command's, when it ends).
  void revoke_tokens_described(int64_t user_id, const std::string& description);
  std::optional<pb::User> experiment_owner(int64_t experiment_id);

  /// The model registry and deleting experiments (storage/database_models.cpp).
  /// nullopt when the name is taken.
  std::optional<pb::Model> insert_model(const std::string& name, const std::string& description,
                                        const std::vector<std::string>& labels, int64_t owner_id);
  std::vector<pb::Model> list_models();
  std::optional<pb::Model> get_model(const std::string& name);
  std::vector<pb::ModelVersion> model_versions(int64_t model_id);
  /// Version max + 1 of the model; the caller checked that the checkpoint is COMPLETED.
  pb::ModelVersion insert_model_version(int64_t model_id, const std::string& checkpoint_uuid, const std::string& name,
                                        const std::string& metadata_json, int64_t owner_id);
  void delete_model(int64_t model_id);
  /// The model versions that point at a checkpoint of the experiment, or at the checkpoint.
  std::vector<pb::ModelVersion> versions_of_checkpoints_of(int64_t experiment_id);
  std::vector<pb::ModelVersion> versions_of_checkpoint(const std::string& uuid);
  /// Trials of other experiments that started from one of this experiment's checkpoints (id,
  /// experiment_id and warm_start_checkpoint_uuid set).
  std::vector<pb::Trial> trials_started_from_checkpoints_of(int64_t experiment_id);
  /// Every row of the experiment, its trials, metrics, logs, checkpoints (the files are the
  /// caller's), snapshot and model definition, in one transaction.
  void delete_experiment_rows(int64_t experiment_id);
  /// The tar archive submitted with the experiment; "" for none.
  std::string model_definition(int64_t experiment_id);

  /// Workspaces and projects (storage/database_projects.cpp). nullopt when the name is taken.
  std::optional<pb::Workspace> insert_workspace(const std::string& name, int64_t owner_id);
  std::vector<pb::Workspace> list_workspaces();
  std::optional<pb::Workspace> get_workspace(int64_t id);
  std::vector<pb::Project> projects_of(int64_t workspace_id);
  std::optional<pb::Project> insert_project(int64_t workspace_id, const std::string& name, const std::string& description,
                                            int64_t owner_id);
  std::optional<pb::Project> get_project(int64_t id);
  void annotate_project(int64_t id, const pb::PatchProjectRequest& change);
  /// The caller checked that no experiment is in it (or in its projects).
  void delete_project(int64_t id);
  void delete_workspace(int64_t id);
  void move_experiment(int64_t experiment_id, int64_t project_id);

  /// Commands, shells, notebooks and TensorBoards (storage/database_tasks.cpp).
  /// A task is stored with its state, start_time now, its secrets, a shell's keys and its
  /// uploaded context (a tar archive). A task read back has its proxy_path with the notebook's
  /// token and a shell's private key: the caller shows them to whom it may.
  void insert_task(const pb::Task& task, const task_secrets& secrets, const std::string& context);
  /// Its state, agent, exit and service; TERMINATED sets end_time.
  void update_task(const pb::Task& task);
  std::optional<pb::Task> get_task(const std::string& id);
  /// Every task of `kind` (UNSPECIFIED: all kinds), ended ones too, by start time.
  std::vector<pb::Task> list_tasks(pb::TaskKind kind);
  /// Every task that has not ended, for the master to take back.
  struct restorable_task {
    pb::Task task;
    task_secrets secrets;
    std::string context;
  };
  std::vector<restorable_task> restorable_tasks();
  /// A task's entries with id > after_id, ids ascending, at most limit.
  std::vector<pb::LogEntry> task_logs(const std::string& task_id, int64_t after_id, int limit);
  /// Every task, and every trial that waits for or holds slots, by start time.
  std::vector<pb::TaskSummary> task_summaries();

  /// Instances of pools' providers (storage/database_instances.cpp). An instance is stored, with
  /// its launch_time (unset: now), before it is launched.
  void insert_instance(const pb::ProvisionedInstance& instance, const std::string& provider);
  /// Its state, and end_time and end_reason once it has ended.
  void update_instance(const pb::ProvisionedInstance& instance);
  /// The pool's instances that have not ended, oldest first.
  std::vector<pb::ProvisionedInstance> live_instances(const std::string& pool);

  /// The ingestion benchmark's baseline: one raw COPY of `rows` synthetic "training" rows (metrics
  /// {"loss": ...}), `batch` at a time for each of the trials in turn, each trial's total_batches
  /// counting up from 1, with no per-trial UPDATE.
  void copy_raw_metrics(const std::vector<int64_t>& trial_ids, int64_t rows, int64_t batch);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace det::storage
