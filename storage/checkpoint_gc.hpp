#pragma once
// Which checkpoints an experiment's GC deletes (Determined's ExperimentCheckpointsToGCRaw,
// determined-reference §7), apart from the database so that the rule can be checked on its own.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace det::storage {

struct gc_policy {
  int save_experiment_best = 0;
  int save_trial_best = 1;
  int save_trial_latest = 1;
};

struct gc_candidate {
  std::string uuid;
  int64_t trial_id = 0;
  int64_t steps_completed = 0;
  /// The searcher metric of the validation at the checkpoint's steps, if there was one.
  std::optional<double> metric;
  /// Breaks ties between equal metrics, as Determined's validation id does: lower ranks first.
  int64_t order = 0;
};

/// The uuids to delete: a checkpoint goes when ((its experiment rank > save_experiment_best and its
/// trial rank > save_trial_best) or it has no metric) and its rank among its trial's checkpoints
/// by steps, newest first, > save_trial_latest. Ranks count from 1, best first (smaller metric is
/// better unless `smaller_is_better` is false); checkpoints in `keep` (warm starts) always stay.
std::set<std::string> checkpoints_to_delete(const std::vector<gc_candidate>& candidates, const gc_policy& policy,
                                            bool smaller_is_better, const std::set<std::string>& keep = {});

}  // namespace det::storage
