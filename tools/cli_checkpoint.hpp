#pragma once
// `det checkpoint ...` (alias `det c`), `det experiment list-checkpoints` and `det trial download`.

#include <cstdint>
#include <optional>
#include <string>

namespace det::tools {

class rest_client;

int describe_checkpoint(rest_client& master, const std::string& uuid, bool json);
/// Fetches every file of the checkpoint into `output` (default ./checkpoints/UUID).
int download_checkpoint(rest_client& master, const std::string& uuid, std::string output);
int delete_checkpoint(rest_client& master, const std::string& uuid);
/// The experiment's completed checkpoints; with `best`, only the best K by the searcher metric.
int list_experiment_checkpoints(rest_client& master, std::int64_t experiment_id, std::optional<int> best,
                                bool json);
/// Downloads the trial's best (by the searcher metric) or latest checkpoint.
int download_trial_checkpoint(rest_client& master, std::int64_t trial_id, bool best, std::string output);

} // namespace det::tools
