#include "runtime/worker_event_files.hpp"

#include <iostream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "config/experiment_config.hpp"
#include "messages/trial.pb.h"

namespace det::runtime {

namespace {

// The HParams dashboard takes numbers, strings and booleans; anything else (a list) is shown as
// its JSON text.
void flatten(const nlohmann::json& value, const std::string& name, std::map<std::string, tensorboard::hparam_value>& out) {
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

std::unique_ptr<tensorboard::event_file_writer> open_event_file(const pb::TrialSpec& spec) {
  const auto directory = config::tensorboard_dir_under(spec.checkpoint_root(), spec.experiment_id(), spec.trial_id());
  try {
    auto writer = std::make_unique<tensorboard::event_file_writer>(directory);
    std::map<std::string, tensorboard::hparam_value> hparams;
    flatten(nlohmann::json::parse(spec.hparams().empty() ? "{}" : spec.hparams()), "", hparams);
    writer->write_session_start(hparams, tensorboard::wall_time_now());
    return writer;
  } catch (const std::exception& e) {
    std::cout << "trial " << spec.trial_id() << ": writing no TensorBoard event files: " << e.what() << std::endl;
    return nullptr;
  }
}

}  // namespace det::runtime
