#pragma once
// `det experiment ...` (alias `det e`) and `det submit`.

#include <cstdint>
#include <string>
#include <vector>

namespace det::tools {

class rest_client;

/// Validates the TOML file locally (nothing reaches the master when it is bad),
/// submits it, and with `follow` shows live progress until the experiment ends.
/// Returns the exit status: 0 when submitted, or with `follow` when it COMPLETED.
/// Submits the config, with `model_dir` (if not empty) packed as its model definition.
/// `project`: a project id or WORKSPACE/PROJECT; "" for Uncategorized.
int create_experiment(rest_client& master, const std::string& config_path, const std::string& model_dir,
                      const std::string& project, bool follow);

/// Prints the experiments as a table, or with `json` the GetExperimentsResponse.
/// Which experiments `det experiment list` shows, and in which order.
struct experiment_query {
  std::string user;                 // only this user's
  std::vector<std::string> states;  // only in these states (ACTIVE, COMPLETED, ...)
  std::string label;                // only with this label
  std::string project;              // only in this project (id or WORKSPACE/PROJECT)
  bool all = false;                 // archived ones too
  std::string sort_by = "id";
  bool descending = false;
  std::int32_t limit = 0;           // 0: every page
  std::int64_t offset = 0;
};
int list_experiments(rest_client& master, const experiment_query& query, bool json);

/// Prints one experiment and its trials, or with `json` the GetExperimentResponse.
/// How `det experiment describe` shows an experiment: a summary with its trials, JSON, or only
/// its config as det stores it (TOML) or as Determined writes it (YAML).
enum class describe_format : uint8_t { summary, json, toml, yaml };

int describe_experiment(rest_client& master, std::int64_t id, describe_format format);

/// POST /api/v1/experiments/ID/ACTION (kill, pause or activate); prints "Experiment ID WHAT_NOW.".
int experiment_action(rest_client& master, std::int64_t id, const std::string& action,
                      const std::string& what_now);

} // namespace det::tools
