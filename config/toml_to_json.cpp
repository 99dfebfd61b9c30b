#include "config/config_error.hpp"
#include "config/config_json.hpp"
#include "config/toml_reader.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

namespace det::config::detail {

namespace {

nlohmann::json to_json(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: {
      auto object = nlohmann::json::object();
      for (auto&& [key, value] : *node.as_table()) object[std::string(key.str())] = to_json(value);
      return object;
    }
    case toml::node_type::array: {
      auto array = nlohmann::json::array();
      for (const auto& element : *node.as_array()) array.push_back(to_json(element));
      return array;
    }
    case toml::node_type::string: return node.as_string()->get();
    case toml::node_type::integer: return node.as_integer()->get();
    case toml::node_type::floating_point: return node.as_floating_point()->get();
    case toml::node_type::boolean: return node.as_boolean()->get();
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time: {
      // JSON has no dates: keep TOML's own (RFC 3339) spelling.
      std::ostringstream text;
      node.visit([&](const auto& value) { text << value; });
      return text.str();
    }
    case toml::node_type::none: break;
  }
  return nullptr;
}

} // namespace

std::string to_json_text(const toml::node& node) {
  return to_json(node).dump();
}

} // namespace det::config::detail

namespace det::config {

namespace {

// Determined's experiment-config defaults (schemas/expconf/v0) for what its PyTorch Trainer and
// Core API read by key.
const nlohmann::json& determined_defaults() {
  static const auto defaults = nlohmann::json::parse(R"({
    "checkpoint_policy": "best",
    "data": {},
    "hyperparameters": {},
    "max_restarts": 5,
    "min_checkpoint_period": {"batches": 0},
    "min_validation_period": {"batches": 0},
    "optimizations": {"aggregation_frequency": 1, "average_aggregated_gradients": true,
                      "average_training_metrics": true, "gradient_compression": false,
                      "mixed_precision": "O0"},
    "perform_initial_validation": false,
    "profiling": {"enabled": false},
    "records_per_epoch": 0,
    "reproducibility": {},
    "resources": {"slots_per_trial": 1},
    "scheduling_unit": 100,
    "searcher": {"smaller_is_better": true}
  })");
  return defaults;
}

// `config` with every key of `defaults` it lacks, objects merged key by key.
void fill_defaults(nlohmann::json& config, const nlohmann::json& defaults) {
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    auto found = config.find(it.key());
    if (found == config.end())
      config[it.key()] = it.value();
    else if (found->is_object() && it.value().is_object())
      fill_defaults(*found, it.value());
  }
}

} // namespace

std::string experiment_config_json(std::string_view toml_text) {
  toml::table table;
  try {
    table = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    throw config_error("the stored config is not TOML: " + std::string(e.description()));
  }
  auto config = detail::to_json(table);
  fill_defaults(config, determined_defaults());
  return config.dump();
}

} // namespace det::config
