#pragma once
// The experiment config as the JSON a trial's process reads (Determined's ClusterInfo.trial._config).

#include <string>
#include <string_view>

namespace det::config {

/// The stored TOML config as a JSON object, with Determined's defaults for the keys its training
/// code reads without checking (records_per_epoch, scheduling_unit, min_validation_period,
/// min_checkpoint_period, checkpoint_policy, perform_initial_validation, optimizations, ...) where
/// the config leaves them out. Throws config_error for text that is not TOML.
std::string experiment_config_json(std::string_view toml_text);

}  // namespace det::config
