#pragma once
// `det model ...`, after Determined's CLI: the model registry; and `det experiment delete|fork`.

#include <cstdint>
#include <string>
#include <vector>

namespace det::tools {

class rest_client;

int create_model(rest_client& master, const std::string& name, const std::string& description,
                 const std::vector<std::string>& labels, bool json);
int list_models(rest_client& master, bool json);
/// The model and its versions.
int describe_model(rest_client& master, const std::string& name, bool json);
int register_version(rest_client& master, const std::string& name, const std::string& checkpoint_uuid,
                     const std::string& version_name, const std::string& metadata_json, bool json);
/// Downloads version `version` (0: the latest) into `output` (default: the checkpoint's uuid).
int download_model(rest_client& master, const std::string& name, int version, const std::string& output);
int delete_model(rest_client& master, const std::string& name);

int delete_experiment(rest_client& master, std::int64_t id);
/// det trial continue: trial `trial` trains further to `max_length` from its latest checkpoint,
/// as a new experiment. det experiment continue passes its experiment's only trial.
int continue_trial(rest_client& master, std::int64_t trial, std::int64_t max_length);
int continue_experiment(rest_client& master, std::int64_t id, std::int64_t max_length);
/// A new experiment from `id`'s config (or `config_path`'s) and model definition.
int fork_experiment(rest_client& master, std::int64_t id, const std::string& config_path);

} // namespace det::tools
