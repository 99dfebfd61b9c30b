#pragma once
// `det trial ...` (alias `det t`).

#include <cstdint>
#include <optional>

namespace det::tools {

class rest_client;

/// Prints a trial's fields and latest metrics, with `metrics` also every
/// reported training and validation row, with `profile` a summary of its profiling
/// metrics, or with `json` the GetTrialResponse.
int describe_trial(rest_client& master, std::int64_t id, bool json, bool metrics, bool profile);

struct trial_logs_options {
  bool follow = false;              ///< keep printing until the trial ends and its logs stop
  std::optional<std::int64_t> head; ///< only the first N lines
  std::optional<std::int64_t> tail; ///< only the last N lines (then follow, if asked)
};

int print_trial_logs(rest_client& master, std::int64_t id, const trial_logs_options& options);

} // namespace det::tools
