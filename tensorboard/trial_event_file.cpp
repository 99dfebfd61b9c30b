#include "tensorboard/trial_event_file.hpp"

#include <nlohmann/json.hpp>

namespace det::tensorboard {

namespace {

// The HParams dashboard takes numbers, strings and booleans.
void flatten(const nlohmann::json& value, const std::string& name, std::map<std::string, hparam_value>& out) {
  if (value.is_object()) {
    for (const auto& [key, inner] : value.items()) flatten(inner, name.empty() ? key : name + "." + key, out);
  } else if (value.is_boolean()) {
    out[name] = value.get<bool>();
  } else if (value.is_number()) {
    out[name] = value.get<double>();
  } else if (value.is_string()) {
    out[name] = value.get<std::string>();
  } else {
    out[name] = value.dump();
  }
}

}  // namespace

std::unique_ptr<event_file_writer> open_trial_event_file(const std::string& directory, const std::string& hparams_json) {
  auto writer = std::make_unique<event_file_writer>(directory);
  std::map<std::string, hparam_value> hparams;
  flatten(nlohmann::json::parse(hparams_json.empty() ? "{}" : hparams_json, nullptr, false), "", hparams);
  writer->write_session_start(hparams, wall_time_now());
  return writer;
}

}  // namespace det::tensorboard
