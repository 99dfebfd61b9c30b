#include "config/continuation.hpp"

#include <sstream>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "config/config_error.hpp"

namespace det::config {
namespace {

toml::array to_toml_array(const nlohmann::json& value);

// A JSON value as the TOML value it was read from.
void put_value(toml::table& into, const std::string& key, const nlohmann::json& value) {
  if (value.is_boolean()) into.insert_or_assign(key, value.get<bool>());
  else if (value.is_number_integer()) into.insert_or_assign(key, value.get<int64_t>());
  else if (value.is_number()) into.insert_or_assign(key, value.get<double>());
  else if (value.is_string()) into.insert_or_assign(key, value.get<std::string>());
  else if (value.is_array()) into.insert_or_assign(key, to_toml_array(value));
  else if (value.is_object()) {
    toml::table nested;
    for (auto& [k, v] : value.items()) put_value(nested, k, v);
    into.insert_or_assign(key, std::move(nested));
  }
}

toml::array to_toml_array(const nlohmann::json& value) {
  toml::array out;
  for (const auto& v : value) {
    toml::table holder;
    put_value(holder, "v", v);
    if (auto* node = holder.get("v")) out.push_back(*node);
  }
  return out;
}

// The trial's hyperparameters as constants; a nested group stays a table of constants.
toml::table constants_of(const nlohmann::json& hparams) {
  toml::table out;
  for (auto& [name, value] : hparams.items()) {
    if (value.is_object()) {
      out.insert_or_assign(name, constants_of(value));
      continue;
    }
    toml::table constant;
    constant.insert_or_assign("type", "const");
    put_value(constant, "val", value);
    out.insert_or_assign(name, std::move(constant));
  }
  return out;
}

} // namespace

std::string continuation_config(const std::string& parent_toml, const std::string& source_path, int64_t trial_id,
                                const std::string& hparams_json, int64_t max_length) {
  toml::table config;
  try {
    config = toml::parse(parent_toml, source_path);
  } catch (const toml::parse_error& e) {
    throw config_error(source_path + ": " + std::string(e.description()));
  }
  const auto hparams = nlohmann::json::parse(hparams_json.empty() ? "{}" : hparams_json, nullptr, false);
  if (hparams.is_discarded() || !hparams.is_object())
    throw config_error(source_path + ": trial " + std::to_string(trial_id) + "'s hyperparameters are not a JSON object");
  const auto* parent = config["searcher"].as_table();
  toml::table searcher;
  searcher.insert_or_assign("name", "single");
  std::string unit = "batches";
  if (parent) {
    for (const char* key : {"metric", "smaller_is_better"})
      if (const auto* node = parent->get(key)) searcher.insert_or_assign(key, *node);
    if (const auto* length = parent->get_as<toml::table>("max_length"); length && !length->empty())
      unit = std::string(length->begin()->first.str());
  }
  toml::table length;
  length.insert_or_assign(unit, max_length);
  searcher.insert_or_assign("max_length", std::move(length));
  searcher.insert_or_assign("source_trial_id", trial_id);
  searcher.insert_or_assign("source_resumes", true);
  config.insert_or_assign("searcher", std::move(searcher));
  config.insert_or_assign("hyperparameters", constants_of(hparams));
  const auto name = config["name"].value_or(std::string{"experiment"});
  config.insert_or_assign("name", name + " (continues trial " + std::to_string(trial_id) + ")");
  std::ostringstream out;
  out << config << '\n';
  return out.str();
}

} // namespace det::config
