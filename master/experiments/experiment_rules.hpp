#pragma once
// The rules of experiments as the REST API applies them, apart from HTTP: what a query's filter
// says, what a submitted config must pass (its syntax, Determined's YAML turned into det's TOML,
// its pool, host paths and grid size), what a fork takes from its parent, what a continued trial's
// experiment is, and which changes and labels an experiment takes. Errors are errc with a sentence.

#include <cstdint>
#include <optional>
#include <string>

#include "caf/expected.hpp"
#include "config/experiment_config.hpp"
#include "messages/api.pb.h"
#include "master/http/http_types.hpp"

namespace det {
struct master_handles;
}

namespace det::runtime {

/// The filter of GET /api/v1/experiments from its query; invalid_input naming the bad parameter.
caf::expected<pb::ExperimentFilter> experiment_filter_of(const http_request& req);

/// The name a config's errors give it: its path, else "<request>", or "<request>.yaml" for YAML
/// that came without one (Determined's clients send none), so that it is read as YAML.
std::string config_source(const std::string& config_path, const std::string& text);

/// The config of a submission, checked against this master (its pools, host access policy and
/// largest grid); a YAML config (named by its path's suffix) is replaced in `body` by det's TOML.
/// invalid_input or forbidden with a sentence that names the file and field.
caf::expected<config::experiment_config> checked_submission(pb::CreateExperimentRequest& body, const std::string& path,
                                                           const master_handles& handles);

/// What the search of a config would make (det preview), checked as a submission's grid is.
caf::expected<pb::PreviewSearchResponse> search_preview(const pb::PreviewSearchRequest& body, int64_t max_grid_trials);

/// A fork takes what its request leaves empty from its parent: the config and the model
/// definition (`parent_model`, the parent's archive, asked only when the request has none).
void inherit_from_parent(pb::CreateExperimentRequest& body, const pb::Experiment& parent, std::string parent_model);

/// The experiment that continues trial `trial` of `parent` from its latest checkpoint for
/// `max_length` more (det trial continue).
caf::expected<pb::CreateExperimentRequest> continuation_of(const pb::Trial& trial, const pb::Experiment& parent,
                                                           int64_t max_length);

/// Experiment `id` of the reader's answer `found`: not_found when there is none.
caf::expected<pb::Experiment> stored_experiment(int64_t id, pb::GetExperimentResponse& found);
/// As stored_experiment(), for one that is not live: unavailable while it has not ended (a
/// restarted master has not restored it yet).
caf::expected<pb::Experiment> ended_experiment(int64_t id, pb::GetExperimentResponse& found);

/// What PATCH /api/v1/experiments/N changes: the annotation to store (name, description, notes)
/// and the scheduling settings to send; either is absent when the request leaves it alone.
struct experiment_patch {
  std::optional<pb::PatchExperimentRequest> annotation;
  std::optional<pb::JobSettings> scheduling;
};
/// `body`'s changes, or why it may not make them (a priority out of 1..99, a negative weight or
/// max_slots, nothing to change, an empty name).
caf::expected<experiment_patch> patch_of(const pb::PatchExperimentRequest& body);

/// Why `label` cannot label an experiment; none when it can.
caf::error label_refusal(const std::string& label);

} // namespace det::runtime
