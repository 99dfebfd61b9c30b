#pragma once
// The config of an experiment that continues a trial (det trial continue, Determined's "continue
// trial"): the trial trains further from its latest checkpoint, its steps included, as a new
// experiment with the trial's hyperparameters.

#include <cstdint>
#include <string>

namespace det::config {

/// `parent_toml` (the trial's experiment's config) with: the searcher `single` on the same metric
/// to `max_length` in the parent's length unit, resuming from trial `trial_id`'s latest checkpoint
/// (source_trial_id, source_resumes), the trial's hyperparameters (`hparams_json`) as constants,
/// and a name that says what it continues. Throws config_error naming `source_path`.
std::string continuation_config(const std::string& parent_toml, const std::string& source_path, int64_t trial_id,
                                const std::string& hparams_json, int64_t max_length);

} // namespace det::config
