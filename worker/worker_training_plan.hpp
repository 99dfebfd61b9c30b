#pragma once
// The harness's training plan for one trial run, from the spec the master handed out and the
// experiment's config.

#include <filesystem>

#include "gpu/training_plan.hpp"

namespace det::config {
struct experiment_config;
}

namespace det::pb {
class TrialSpec;
}

namespace det::runtime {

/// What to train (builtin:NAME, or plugin:LIBRARY:CLASS with LIBRARY relative to `workdir`), on
/// which data and for how long. Throws std::runtime_error with a sentence for a malformed plugin
/// entrypoint.
harness::training_plan make_training_plan(const pb::TrialSpec& spec, const config::experiment_config& cfg,
                                          const std::filesystem::path& workdir);

} // namespace det::runtime
