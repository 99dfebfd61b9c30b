#pragma once
// The protocols of the actors that talk to PostgreSQL: the row writer, the writer and the readers.

#include "caf/typed_actor.hpp"
#include "master/atoms.hpp"
#include "messages/interfaces.hpp"
#include "model/ids.hpp"

namespace det {

/// The rows a slot or a worker waits for, each committed before it is answered, on a connection of
/// their own so that they never wait behind the persistence writer's batched work.
using row_writer_actor = caf::typed_actor<
    caf::replies_to<create_atom, pb::Trial>::with<int64_t>,  // the new id, or errc::storage_failed
    caf::replies_to<pb::Checkpoint>::with<bool>,              // false: not recorded
    caf::replies_to<flush_atom>::with<bool>,                  // answered after everything asked before
    caf::replies_to<inspect_atom>::with<std::string>>;

/// The writer: with the row writer, the only actors that write to PostgreSQL but for checkpoint
/// deletion. Metric and log rows are buffered and written with COPY; a metric batch is answered
/// once committed.
using persistence_actor = caf::typed_actor<
    // An experiment with its first trials and its model archive, in one transaction: answered with
    // their ids set, or errc::storage_failed.
    caf::replies_to<create_atom, pb::GetExperimentResponse, std::string>::with<pb::GetExperimentResponse>,
    // What people write about an experiment: name, description, notes; labels; archived (false: it has not ended).
    caf::replies_to<update_atom, experiment_id, pb::PatchExperimentRequest>::with<bool>,
    caf::replies_to<add_atom, experiment_id, std::string>::with<bool>,
    caf::replies_to<remove_atom, experiment_id, std::string>::with<bool>,
    caf::replies_to<archive_atom, experiment_id, bool>::with<bool>,
    caf::reacts_to<update_atom, pb::Experiment>,
    caf::reacts_to<update_atom, pb::Trial>,
    caf::reacts_to<update_atom, pb::Agent>,
    caf::reacts_to<snapshot_atom, experiment_id, std::string>,  // serialized searcher snapshot
    // the same, written at once (after what is buffered): answers once it is committed
    caf::replies_to<snapshot_atom, experiment_id, std::string, flush_atom>::with<bool>,
    caf::reacts_to<update_atom, experiment_id, pb::JobSettings>,  // scheduling settings changed
    caf::replies_to<pb::MetricBatch>::with<int64_t>,
    caf::reacts_to<pb::LogBatch>,
    caf::replies_to<flush_atom>::with<int64_t>,  // writes what it buffered; answers the reports written
    caf::reacts_to<tick_atom>,
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Readers of the REST API's pages, each on its own connection (a pool of them stands behind one
/// handle). Metrics, logs and checkpoints are read after the writer has written what it buffered.
/// Failures answer errc::storage_failed; a missing row answers an empty response.
using persistence_reader_actor = caf::typed_actor<
    caf::replies_to<list_atom, int64_t, int32_t, pb::ExperimentFilter>::with<pb::GetExperimentsResponse>,  // offset, limit
    caf::replies_to<get_atom, experiment_id>::with<pb::GetExperimentResponse>,
    caf::replies_to<get_atom, trial_id>::with<pb::GetTrialResponse>,
    // group ("" for all), offset, limit
    caf::replies_to<metrics_atom, trial_id, std::string, int64_t, int32_t>::with<pb::GetTrialMetricsResponse>,
    // the latest report of each metric group, at most this many groups
    caf::replies_to<metrics_atom, trial_id, int32_t>::with<pb::GetTrialMetricsResponse>,
    // group, metric name, first and last batches, at most this many points (database::metric_series)
    caf::replies_to<series_atom, trial_id, std::string, std::string, int64_t, int64_t, int32_t>::with<pb::MetricSeries>,
    // every trial's whole series: group, metric name, at most this many points each
    caf::replies_to<series_atom, experiment_id, std::string, std::string, int32_t>::with<pb::ExperimentMetricSeries>,
    caf::replies_to<census_atom>::with<pb::StoredCensus>,  // for Prometheus
    caf::replies_to<logs_atom, trial_id, int64_t, int32_t>::with<pb::TrialLogsResponse>,  // after id, limit
    caf::replies_to<logs_atom, std::string, int64_t, int32_t>::with<pb::TaskLogsResponse>,  // a task's
    caf::replies_to<checkpoints_atom, experiment_id>::with<pb::GetCheckpointsResponse>,
    caf::replies_to<checkpoints_atom, trial_id>::with<pb::GetCheckpointsResponse>,
    caf::replies_to<get_atom, std::string>::with<pb::GetCheckpointResponse>,  // by uuid
    caf::replies_to<model_atom, experiment_id>::with<std::string>>;  // its model definition (tar); "" for none

} // namespace det
