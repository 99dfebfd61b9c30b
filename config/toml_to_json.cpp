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
