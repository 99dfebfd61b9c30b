#include "tools/cli_model.hpp"

#include <iostream>
#include <stdexcept>

#include <google/protobuf/empty.pb.h>

#include "messages/api.pb.h"
#include "messages/json.hpp"
#include "tools/cli_checkpoint.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {
namespace {

std::string model_path(const std::string& name) {
  return "/api/v1/models/" + url_encoded(name);
}

} // namespace

int create_model(rest_client& master, const std::string& name, const std::string& description,
                 const std::vector<std::string>& labels, bool json) {
  pb::PostModelRequest request;
  request.set_name(name);
  request.set_description(description);
  for (const auto& l : labels) request.add_labels(l);
  pb::PostModelResponse reply;
  master.post("/api/v1/models", request, reply);
  if (json)
    std::cout << det::to_json(reply, true) << '\n';
  else
    std::cout << "Created model " << reply.model().name() << " (id " << reply.model().id() << ").\n";
  return 0;
}

int list_models(rest_client& master, bool json) {
  auto models = master.get<pb::GetModelsResponse>("/api/v1/models");
  if (json) {
    std::cout << det::to_json(models, true) << '\n';
    return 0;
  }
  table out({"ID", "Name", "Owner", "Versions", "Labels", "Description", "Created"});
  for (const auto& m : models.models())
    out.add_row({std::to_string(m.id()), m.name(), m.owner(), std::to_string(m.num_versions()), comma_joined(m.labels()),
                 m.description(), format_time(m.created_at())});
  out.print(std::cout);
  return 0;
}

int describe_model(rest_client& master, const std::string& name, bool json) {
  auto model = master.get<pb::GetModelResponse>(model_path(name));
  if (json) {
    std::cout << det::to_json(model, true) << '\n';
    return 0;
  }
  const auto& m = model.model();
  std::cout << "Model " << m.name() << " (id " << m.id() << "), owner " << m.owner() << ", created "
            << format_time(m.created_at()) << "\n";
  if (!m.description().empty()) std::cout << "Description: " << m.description() << "\n";
  if (m.labels_size() > 0) std::cout << "Labels: " << comma_joined(m.labels()) << "\n";
  table out({"Version", "Name", "Checkpoint", "Experiment", "Trial", "Batches", "Metadata", "Created"});
  for (const auto& v : model.versions())
    out.add_row({std::to_string(v.version()), v.name(), v.checkpoint_uuid(), std::to_string(v.checkpoint().experiment_id()),
                 std::to_string(v.checkpoint().trial_id()), std::to_string(v.checkpoint().steps_completed()), v.metadata(),
                 format_time(v.created_at())});
  out.print(std::cout);
  return 0;
}

int register_version(rest_client& master, const std::string& name, const std::string& checkpoint_uuid,
                     const std::string& version_name, const std::string& metadata_json, bool json) {
  pb::PostModelVersionRequest request;
  request.set_checkpoint_uuid(checkpoint_uuid);
  request.set_name(version_name);
  request.set_metadata(metadata_json);
  pb::PostModelVersionResponse reply;
  master.post(model_path(name) + "/versions", request, reply);
  if (json)
    std::cout << det::to_json(reply, true) << '\n';
  else
    std::cout << "Registered checkpoint " << checkpoint_uuid << " as version " << reply.version().version() << " of model "
              << name << ".\n";
  return 0;
}

int download_model(rest_client& master, const std::string& name, int version, const std::string& output) {
  auto model = master.get<pb::GetModelResponse>(model_path(name));
  if (model.versions_size() == 0)
    throw std::runtime_error("model " + name + " has no versions yet: det model register-version " + name + " UUID");
  const pb::ModelVersion* chosen = version == 0 ? &model.versions(model.versions_size() - 1) : nullptr;
  for (const auto& v : model.versions())
    if (v.version() == version) chosen = &v;
  if (!chosen)
    throw std::runtime_error("model " + name + " has no version " + std::to_string(version) + " (it has 1 to " +
                             std::to_string(model.versions(model.versions_size() - 1).version()) + ")");
  return download_checkpoint(master, chosen->checkpoint_uuid(), output);
}

int delete_model(rest_client& master, const std::string& name) {
  google::protobuf::Empty reply;
  master.del(model_path(name), reply);
  std::cout << "Deleted model " << name << " and its versions; their checkpoints are no longer kept from GC.\n";
  return 0;
}

int delete_experiment(rest_client& master, std::int64_t id) {
  google::protobuf::Empty reply;
  master.del(experiment_path(id), reply);
  std::cout << "Deleted experiment " << id << ", its trials, metrics, logs and checkpoint files.\n";
  return 0;
}

int continue_trial(rest_client& master, std::int64_t trial, std::int64_t max_length) {
  pb::ContinueTrialRequest request;
  request.set_max_length(max_length);
  pb::CreateExperimentResponse created;
  master.post("/api/v1/trials/" + std::to_string(trial) + "/continue", request, created);
  std::cout << "Created experiment " << created.experiment().id() << " (trial " << trial << " continues to "
            << max_length << ")\n";
  return 0;
}

int continue_experiment(rest_client& master, std::int64_t id, std::int64_t max_length) {
  auto exp = master.get<pb::GetExperimentResponse>(experiment_path(id));
  if (exp.trials_size() != 1)
    throw std::runtime_error("experiment " + std::to_string(id) + " has " + std::to_string(exp.trials_size()) +
                             " trials: continue one of them with det trial continue TRIAL_ID --max-length L");
  return continue_trial(master, exp.trials(0).id(), max_length);
}

int fork_experiment(rest_client& master, std::int64_t id, const std::string& config_path) {
  pb::CreateExperimentRequest request;
  request.set_parent_id(id);
  if (!config_path.empty()) {
    request.set_config(read_file(config_path));
    request.set_config_path(config_path);
  }
  pb::CreateExperimentResponse created;
  master.post("/api/v1/experiments", request, created);
  std::cout << "Created experiment " << created.experiment().id() << " (a fork of experiment " << id << ")\n";
  return 0;
}

} // namespace det::tools
