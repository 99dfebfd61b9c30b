#pragma once
// When the trials' summaries of their metrics (latest_training, latest_validation, total_batches)
// are written: apart from the metric rows, which every commit writes.

#include <chrono>

namespace det::storage {

/// When database::commit_metrics writes the trials' summaries of the metrics it commits.
enum class summary_timing {
  when_due,  // with the first commit at least summary_interval after the last one written
  now,       // with this commit: a trial's summary is complete before its final state is stored
};

/// The trials' summaries trail their committed metrics by at most this much (and their rows are
/// always exact, from a master start on: restorable_experiments brings them up to date). Written
/// with every commit, the summaries' UPDATE cost about 10 % of the rows stored per second.
constexpr std::chrono::milliseconds summary_interval{250};

} // namespace det::storage
