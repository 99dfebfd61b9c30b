#include "config/config_overrides.hpp"

#include "config/config_error.hpp"
#include "config/toml_reader.hpp"

#include <sstream>

namespace det::config {
namespace {

// VALUE as TOML reads it, or as a plain string ("python3 train.py", "gpus").
toml::node_view<toml::node> parsed_value(toml::table& holder, std::string_view value) {
  try {
    holder = toml::parse("v = " + std::string(value));
  } catch (const toml::parse_error&) {
    holder = toml::table{{"v", std::string(value)}};
  }
  return holder["v"];
}

void apply(toml::table& root, const std::string& override_text) {
  const auto eq = override_text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw config_error("-c " + override_text + ": expected KEY=VALUE, such as resources.slots=2");
  const auto key = override_text.substr(0, eq);
  toml::table* table = &root;
  std::string walked;
  size_t start = 0;
  for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.', start)) {
    const auto part = key.substr(start, dot - start);
    walked += (walked.empty() ? "" : ".") + part;
    auto* node = table->get(part);
    if (!node) node = table->insert(part, toml::table{}).first->second.as_table();
    table = node->as_table();
    if (!table || part.empty())
      throw config_error("-c " + override_text + ": " + walked + " is not a table of the config");
    start = dot + 1;
  }
  const auto leaf = key.substr(start);
  if (leaf.empty()) throw config_error("-c " + override_text + ": the key ends with '.'");
  toml::table holder;
  table->insert_or_assign(leaf, *parsed_value(holder, std::string_view(override_text).substr(eq + 1)).node());
}

}  // namespace

std::string with_overrides(std::string_view toml_text, std::string_view source_path,
                           const std::vector<std::string>& overrides) {
  detail::diagnostics diag(source_path);
  auto root = detail::parse_document(toml_text, source_path, diag);
  diag.throw_if_any();
  for (const auto& o : overrides) apply(root, o);
  std::ostringstream out;
  out << root << "\n";
  return out.str();
}

std::string toml_string_literal(std::string_view text) {
  std::ostringstream out;
  out << toml::value<std::string>(std::string(text));
  return out.str();
}

}  // namespace det::config
