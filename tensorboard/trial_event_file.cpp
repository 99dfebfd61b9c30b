#include "tensorboard/trial_event_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "node/open_beneath.hpp"

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

// The HParams session start, the first thing a trial's event file holds.
std::unique_ptr<event_file_writer> with_hparams(std::unique_ptr<event_file_writer> writer,
                                                const std::string& hparams_json) {
  std::map<std::string, hparam_value> hparams;
  flatten(nlohmann::json::parse(hparams_json.empty() ? "{}" : hparams_json, nullptr, false), "", hparams);
  writer->write_session_start(hparams, wall_time_now());
  return writer;
}

}  // namespace

std::unique_ptr<event_file_writer> open_trial_event_file(const std::string& directory, const std::string& hparams_json) {
  return with_hparams(std::make_unique<event_file_writer>(directory), hparams_json);
}

std::unique_ptr<event_file_writer> open_trial_event_file_beneath(const std::string& root,
                                                                 const std::string& relative_directory,
                                                                 const std::string& hparams_json) {
  const auto name = new_event_file_name();
  const auto path = root + "/" + relative_directory + "/" + name;
  // The root is the operator's (or a host path the policy allows) and may be made as it is named.
  std::error_code ignored;  // a root that cannot be made fails to open below, with its reason
  std::filesystem::create_directories(root, ignored);
  auto fd = runtime::create_beneath(root, relative_directory, name);
  if (!fd)
    throw std::runtime_error("cannot create the TensorBoard event file " + path + " without following a link: " +
                             std::strerror(errno));
  return with_hparams(std::make_unique<event_file_writer>(fd.release(), path), hparams_json);
}

}  // namespace det::tensorboard
