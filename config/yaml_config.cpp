#include "config/yaml_config.hpp"

#include <yaml-cpp/yaml.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <regex>
#include <sstream>
#include <vector>

#include "config/config_file.hpp"

namespace det::config {

namespace {

// Where a line of the generated TOML came from in the YAML file, so that the readers' errors can
// name the YAML file's lines: an error before `value_column` of the TOML line is about its key.
struct line_mark {
  YAML::Mark key;
  YAML::Mark value;
  size_t value_column = 0;  // 1-based, in the TOML line
};
using line_marks = std::vector<line_mark>;

config_error error_at(std::string_view source_path, const YAML::Mark& mark, const std::string& sentence) {
  return config_error(std::string(source_path) + ":" + std::to_string(mark.line + 1) + ":" +
                      std::to_string(mark.column + 1) + ": " + sentence);
}

std::string quoted(const std::string& text) {
  std::ostringstream out;
  out << toml::value<std::string>(text);  // toml++ writes it escaped and quoted
  return out.str();
}

std::string key_of(const std::string& key) {
  static const std::regex bare("[A-Za-z0-9_-]+");
  return std::regex_match(key, bare) ? key : quoted(key);
}

// A plain scalar's value as YAML 1.1 reads it (PyYAML, which Determined uses): booleans with their
// yes/no/on/off spellings, integers, floats (".inf", "1e-4" too) and strings; null is nothing.
std::optional<std::string> scalar_value(const YAML::Node& node) {
  if (node.IsNull()) return std::nullopt;
  const auto& text = node.Scalar();
  if (node.Tag() == "!") return quoted(text);  // quoted in the YAML: a string whatever it looks like
  static const std::regex null_words("~|null|Null|NULL");
  static const std::regex true_words("true|True|TRUE|yes|Yes|YES|on|On|ON");
  static const std::regex false_words("false|False|FALSE|no|No|NO|off|Off|OFF");
  static const std::regex integer("[-+]?(0|[1-9][0-9_]*)");
  static const std::regex hexadecimal("0x[0-9a-fA-F_]+");
  static const std::regex number("[-+]?(\\.[0-9]+|[0-9][0-9_]*(\\.[0-9_]*)?)([eE][-+]?[0-9]+)?");
  static const std::regex infinity("([-+]?)\\.(inf|Inf|INF)");
  static const std::regex not_a_number("\\.(nan|NaN|NAN)");
  std::smatch m;
  if (std::regex_match(text, null_words)) return std::nullopt;
  if (std::regex_match(text, true_words)) return "true";
  if (std::regex_match(text, false_words)) return "false";
  auto digits = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    return s;
  };
  if (std::regex_match(text, integer)) {
    auto s = digits(text);
    return s[0] == '+' ? s.substr(1) : s;
  }
  if (std::regex_match(text, hexadecimal) && digits(text.substr(2)).size() <= 15)  // fits an int64
    return std::to_string(std::stoll(digits(text.substr(2)), nullptr, 16));
  if (std::regex_match(text, m, infinity)) return (m[1] == "-" ? "-inf" : "inf");
  if (std::regex_match(text, not_a_number)) return "nan";
  if (std::regex_match(text, number)) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.17g", std::strtod(digits(text).c_str(), nullptr));
    std::string value = buffer;
    if (value.find_first_of(".en") == std::string::npos) value += ".0";  // TOML floats need one
    return value;
  }
  return quoted(text);
}

class toml_writer {
 public:
  explicit toml_writer(std::string_view source_path) : source_path_(source_path) {}

  void table(const std::vector<std::string>& path, const YAML::Node& map, const YAML::Mark& mark, bool array_item) {
    if (!path.empty()) {
      std::string header;
      for (const auto& part : path) header += (header.empty() ? "" : ".") + key_of(part);
      line(array_item ? "[[" + header + "]]" : "[" + header + "]", "", mark, mark);
    }
    // Keys with values first: after a sub-table's header, a key would belong to the sub-table.
    for (const auto& entry : map) {
      const auto key = key_text(entry.first);
      const auto& value = entry.second;
      if (value.IsMap() || tables_only(value)) continue;
      if (auto text = inline_value(value)) line(key_of(key) + " = ", *text, entry.first.Mark(), value.Mark());
    }
    for (const auto& entry : map) {
      auto sub = path;
      sub.push_back(key_text(entry.first));
      const auto& value = entry.second;
      if (value.IsMap())
        table(sub, value, entry.first.Mark(), false);
      else if (tables_only(value))
        for (const auto& item : value) table(sub, item, item.Mark(), true);
    }
  }

  std::string text;
  line_marks marks;

 private:
  void line(const std::string& key_part, const std::string& value_part, const YAML::Mark& key, const YAML::Mark& value) {
    text += key_part + value_part + "\n";
    marks.push_back({key, value, key_part.size() + 1});
  }

  std::string key_text(const YAML::Node& key) const {
    if (!key.IsScalar()) throw error_at(source_path_, key.Mark(), "a key must be a string");
    return key.Scalar();
  }

  // A list of tables: written as [[...]] sections, so that their own keys have lines of their own.
  static bool tables_only(const YAML::Node& node) {
    if (!node.IsSequence() || node.size() == 0) return false;
    for (const auto& item : node)
      if (!item.IsMap()) return false;
    return true;
  }

  std::optional<std::string> inline_value(const YAML::Node& node) const {
    if (node.IsScalar() || node.IsNull()) return scalar_value(node);
    if (node.IsSequence()) {
      std::string out = "[";
      for (const auto& item : node) {
        auto value = inline_value(item);
        if (!value) throw error_at(source_path_, item.Mark(), "a list cannot hold null: TOML has no null");
        out += (out.size() > 1 ? ", " : "") + *value;
      }
      return out + "]";
    }
    std::string out = "{";
    for (const auto& entry : node) {
      if (auto value = inline_value(entry.second))
        out += (out.size() > 1 ? ", " : " ") + key_of(key_text(entry.first)) + " = " + *value;
    }
    return out + (out.size() > 1 ? " }" : "}");
  }

  std::string_view source_path_;
};

struct converted {
  std::string toml;
  line_marks marks;
};

converted convert(std::string_view yaml_text, std::string_view source_path) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw error_at(source_path, e.mark, "not valid YAML: " + e.msg);
  }
  if (root.IsNull()) return {};
  if (!root.IsMap()) throw error_at(source_path, root.Mark(), "an experiment config is a mapping of keys to values");
  toml_writer writer(source_path);
  writer.table({}, root, root.Mark(), false);
  return {std::move(writer.text), std::move(writer.marks)};
}

// The readers' "FILE:LINE:COLUMN:" positions in the generated TOML, turned into the YAML's.
std::string with_yaml_positions(const std::string& errors, std::string_view source_path, const line_marks& marks) {
  const std::string prefix = std::string(source_path) + ":";
  std::istringstream in(errors);
  std::string out, line;
  static const std::regex position("^(\\d+):(\\d+):");
  while (std::getline(in, line)) {
    std::smatch m;
    const auto rest = line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : std::string();
    if (!rest.empty() && std::regex_search(rest, m, position)) {
      const auto toml_line = static_cast<size_t>(std::stoul(m[1]));
      const auto toml_column = static_cast<size_t>(std::stoul(m[2]));
      if (toml_line >= 1 && toml_line <= marks.size()) {
        const auto& mark = marks[toml_line - 1];
        const auto& yaml = toml_column < mark.value_column ? mark.key : mark.value;
        line = prefix + std::to_string(yaml.line + 1) + ":" + std::to_string(yaml.column + 1) + ":" + m.suffix().str();
      }
    }
    out += (out.empty() ? "" : "\n") + line;
  }
  return out;
}

void emit(YAML::Emitter& out, const toml::node& node) {
  if (const auto* table = node.as_table()) {
    out << YAML::BeginMap;
    for (const auto& [key, value] : *table) {
      out << YAML::Key << std::string(key.str()) << YAML::Value;
      emit(out, value);
    }
    out << YAML::EndMap;
  } else if (const auto* array = node.as_array()) {
    if (!array->is_array_of_tables()) out << YAML::Flow;  // a list of values on one line
    out << YAML::BeginSeq;
    for (const auto& item : *array) emit(out, item);
    out << YAML::EndSeq;
  } else if (const auto* s = node.as_string()) {
    out << YAML::DoubleQuoted << s->get();
  } else if (const auto* i = node.as_integer()) {
    out << i->get();
  } else if (const auto* f = node.as_floating_point()) {
    const double v = f->get();
    if (std::isnan(v)) out << ".nan";
    else if (std::isinf(v)) out << (v < 0 ? "-.inf" : ".inf");
    else {
      char text[40];  // always with a point or an exponent, so that it reads back as a float
      std::snprintf(text, sizeof text, "%.17g", v);
      std::string value = text;
      if (value.find_first_of(".e") == std::string::npos) value += ".0";
      out << value;
    }
  } else if (const auto* b = node.as_boolean()) {
    out << b->get();
  } else {
    std::ostringstream text;  // dates and times, as TOML writes them
    node.visit([&](const auto& value) { text << value; });
    out << text.str();
  }
}

}  // namespace

bool is_yaml_path(std::string_view path) {
  auto ends = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.substr(path.size() - suffix.size()) == suffix;
  };
  return ends(".yaml") || ends(".yml");
}

bool is_yaml_text(std::string_view text) {
  try {
    toml::parse(text);
    return false;
  } catch (const toml::parse_error&) {
  }
  try {
    return YAML::Load(std::string(text)).IsMap();
  } catch (const YAML::Exception&) {
    return false;
  }
}

std::string yaml_to_toml(std::string_view yaml_text, std::string_view source_path) {
  return convert(yaml_text, source_path).toml;
}

experiment_config parse_yaml_experiment_config(std::string_view yaml_text, std::string_view source_path) {
  auto c = convert(yaml_text, source_path);
  try {
    return parse_experiment_config(c.toml, source_path);
  } catch (const config_error& e) {
    throw config_error(with_yaml_positions(e.what(), source_path, c.marks));
  }
}

std::string experiment_config_text(const std::string& path) {
  auto text = detail::read_config_file(path);
  if (!is_yaml_path(path)) {
    parse_experiment_config(text, path);
    return text;
  }
  parse_yaml_experiment_config(text, path);
  return yaml_to_toml(text, path);
}

std::string toml_to_yaml(std::string_view toml_text) {
  toml::table table;
  try {
    table = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    throw config_error("the stored config is not TOML: " + std::string(e.description()));
  }
  YAML::Emitter out;
  emit(out, table);
  return std::string(out.c_str()) + "\n";
}

}  // namespace det::config
