#include "master/experiments/experiment_rules.hpp"

#include <set>

#include "config/continuation.hpp"
#include "config/host_access_policy.hpp"
#include "config/yaml_config.hpp"
#include "master/http/http_replies.hpp"
#include "master/local_interfaces.hpp"
#include "messages/errc.hpp"
#include "messages/states.hpp"
#include "searcher/hyperparameter_grid.hpp"
#include "searcher/preview.hpp"

namespace det::runtime {
namespace {

constexpr std::size_t max_model_definition_bytes = std::size_t{96} << 20;

caf::error invalid(std::string sentence) {
  return make_error(errc::invalid_input, std::move(sentence));
}

config::experiment_config parsed_config(const std::string& text, const std::string& path) {
  return config::is_yaml_path(path) ? config::parse_yaml_experiment_config(text, path)
                                    : config::parse_experiment_config(text, path);
}

/// Why a grid search has more trials than this master runs, counted before any is made.
caf::error grid_refusal(const config::experiment_config& cfg, const std::string& path, int64_t max_grid_trials) {
  if (cfg.searcher.name != "grid") return {};
  auto refusal = searcher::grid_too_large(cfg.hparams, max_grid_trials,
                                          "this master (max_grid_trials in its master.toml) runs grids of");
  return refusal ? invalid(path + ": " + *refusal) : caf::error{};
}

} // namespace

caf::expected<pb::ExperimentFilter> experiment_filter_of(const http_request& req) {
  pb::ExperimentFilter filter;
  filter.set_user(req.get_param_value("user"));
  filter.set_label(req.get_param_value("label"));
  if (req.has_param("project_id")) {
    auto project = parse_id(req.get_param_value("project_id"));
    if (!project || *project < 0)
      return invalid("query parameter project_id must be a project's id, not \"" + req.get_param_value("project_id") + "\"");
    filter.set_project_id(*project);
  }
  for (size_t i = 0; i < req.get_param_value_count("state"); ++i) {
    auto text = req.get_param_value("state", i);
    pb::State state = pb::STATE_UNSPECIFIED;
    if (!pb::State_Parse(text.rfind("STATE_", 0) == 0 ? text : "STATE_" + text, &state) || state == pb::STATE_UNSPECIFIED)
      return invalid("query parameter state: \"" + text + "\" is not a state (ACTIVE, PAUSED, COMPLETED, CANCELED, ERROR, ...)");
    filter.add_states(state);
  }
  if (req.has_param("archived")) {
    const auto text = req.get_param_value("archived");
    if (text == "false") filter.set_archived(pb::ARCHIVED_FILTER_HIDDEN);
    else if (text == "true") filter.set_archived(pb::ARCHIVED_FILTER_ONLY);
    else if (text == "any") filter.set_archived(pb::ARCHIVED_FILTER_INCLUDED);
    else return invalid("query parameter archived: expected false, true or any, not \"" + text + "\"");
  }
  filter.set_sort_by(req.has_param("sort_by") ? req.get_param_value("sort_by") : "id");
  static const std::set<std::string> sortable{"id", "name", "state", "start_time", "end_time", "owner"};
  if (!sortable.count(filter.sort_by()))
    return invalid("query parameter sort_by: expected id, name, state, start_time, end_time or owner, not \"" +
                   filter.sort_by() + "\"");
  const auto order = req.has_param("order_by") ? req.get_param_value("order_by") : "asc";
  if (order != "asc" && order != "desc")
    return invalid("query parameter order_by: expected asc or desc, not \"" + order + "\"");
  filter.set_descending(order == "desc");
  return filter;
}

std::string config_source(const std::string& config_path, const std::string& text) {
  if (!config_path.empty()) return config_path;
  return config::is_yaml_text(text) ? "<request>.yaml" : "<request>";
}

caf::expected<config::experiment_config> checked_submission(pb::CreateExperimentRequest& body, const std::string& path,
                                                           const master_handles& handles) {
  if (body.model_definition().size() > max_model_definition_bytes)
    return invalid("the model definition is " + std::to_string(body.model_definition().size() >> 20) +
                   " MiB; det takes at most 96 MiB: leave data sets and outputs out of the directory");
  config::experiment_config cfg;
  try {
    // Determined's YAML, named by its path's suffix, is checked by its own lines and stored as det's TOML.
    cfg = parsed_config(body.config(), path);
    if (config::is_yaml_path(path)) body.set_config(config::yaml_to_toml(body.config(), path));
  } catch (const config::config_error& e) {
    return invalid(e.what());
  }
  if (!handles.pool(cfg.resources.resource_pool))
    return invalid(path + ": resources.resource_pool: there is no resource pool named \"" +
                   cfg.resources.resource_pool + "\"");
  if (auto refusal = config::host_access_refusal(handles.host_access, handles.default_checkpoint_root, cfg);
      !refusal.empty())
    return make_error(errc::forbidden, path + ": " + refusal);
  if (auto refusal = grid_refusal(cfg, path, handles.max_grid_trials)) return refusal;
  return cfg;
}

caf::expected<pb::PreviewSearchResponse> search_preview(const pb::PreviewSearchRequest& body, int64_t max_grid_trials) {
  auto path = config_source(body.config_path(), body.config());
  pb::PreviewSearchResponse plan;
  try {
    auto cfg = parsed_config(body.config(), path);
    if (auto refusal = grid_refusal(cfg, path, max_grid_trials)) return refusal;
    plan.set_searcher(cfg.searcher.name);
    for (auto& b : searcher::preview(cfg)) {
      auto* t = plan.add_trials();
      t->set_count(b.count);
      t->set_length(b.length);
      t->set_unit(config::to_string(b.unit));
    }
  } catch (const config::config_error& e) {
    return invalid(e.what());
  }
  return plan;
}

void inherit_from_parent(pb::CreateExperimentRequest& body, const pb::Experiment& parent, std::string parent_model) {
  if (body.model_definition().empty()) body.set_model_definition(std::move(parent_model));
  if (body.config().empty()) {
    body.set_config(parent.config());
    body.set_config_path("experiment " + std::to_string(parent.id()) + "'s config");
  }
}

caf::expected<pb::CreateExperimentRequest> continuation_of(const pb::Trial& trial, const pb::Experiment& parent,
                                                           int64_t max_length) {
  const auto id = trial.id();
  if (trial.latest_checkpoint_uuid().empty())
    return invalid("trial " + std::to_string(id) + " has no checkpoint to continue from");
  if (max_length <= 0)
    return invalid("max_length must be positive: how far the trial trains, in its searcher's unit");
  pb::CreateExperimentRequest create;
  create.set_parent_id(parent.id());
  create.set_config_path("the continuation of trial " + std::to_string(id));
  try {
    create.set_config(config::continuation_config(parent.config(), create.config_path(), id, trial.hparams(), max_length));
  } catch (const config::config_error& e) {
    return invalid(e.what());
  }
  return create;
}

caf::expected<pb::Experiment> stored_experiment(int64_t id, pb::GetExperimentResponse& found) {
  if (found.experiment().id() == 0)
    return make_error(errc::not_found, "experiment " + std::to_string(id) + " not found");
  return std::move(*found.mutable_experiment());
}

caf::expected<pb::Experiment> ended_experiment(int64_t id, pb::GetExperimentResponse& found) {
  auto exp = stored_experiment(id, found);
  if (exp && !is_terminal(exp->state()))
    return make_error(errc::unavailable, "experiment " + std::to_string(id) + " is not running yet; ask again");
  return exp;
}

caf::expected<experiment_patch> patch_of(const pb::PatchExperimentRequest& body) {
  const auto& change = body.resources();
  if (change.has_priority() && (change.priority() < 1 || change.priority() > 99))
    return invalid("resources.priority must be between 1 and 99, not " + std::to_string(change.priority()));
  if (change.has_weight() && !(change.weight() >= 0))
    return invalid("resources.weight must not be negative");
  if (change.has_max_slots() && change.max_slots() < 0)
    return invalid("resources.max_slots must be 0 (no limit) or positive, not " + std::to_string(change.max_slots()));
  const bool annotates = body.has_name() || body.has_description() || body.has_notes();
  const bool reschedules = change.has_priority() || change.has_weight() || change.has_max_slots();
  if (!annotates && !reschedules)
    return invalid("the request changes nothing: set resources.priority, weight or max_slots, name, description or notes");
  if (body.has_name() && body.name().empty())
    return invalid("an experiment's name may not be empty");
  experiment_patch patch;
  if (annotates) {
    patch.annotation = body;
    patch.annotation->clear_resources();
  }
  if (reschedules) patch.scheduling = change;
  return patch;
}

caf::error label_refusal(const std::string& label) {
  if (label.empty() || label.size() > 255 || label.find(',') != std::string::npos)
    return invalid("a label has 1 to 255 characters and no comma, not \"" + label + "\"");
  return {};
}

} // namespace det::runtime
