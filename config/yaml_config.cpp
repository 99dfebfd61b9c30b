#include "config/yaml_config.hpp"

#include <yaml-cpp/yaml.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

#include "config/config_file.hpp"
#include "config/document_limits.hpp"

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

bool is_bare_key(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

std::string key_of(const std::string& key) {
  return is_bare_key(key) ? key : quoted(key);
}

bool one_of(const std::string& text, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), text) != words.end();
}

// A scanner over one plain scalar for YAML 1.1's numbers, by hand: std::regex recursed once per
// character, and a scalar of 200,000 digits exhausted the master's stack.
class number_scanner {
 public:
  explicit number_scanner(std::string_view text) : text_(text) {}

  bool sign() { return take_if([](char c) { return c == '+' || c == '-'; }); }
  bool take(char wanted) { return take_if([&](char c) { return c == wanted; }); }
  /// At least `min` characters of the class (digits, or digits and '_' after the first).
  bool run(bool (*in_class)(char), size_t min = 1) {
    size_t start = pos_;
    while (pos_ < text_.size() && in_class(text_[pos_])) ++pos_;
    return pos_ - start >= min;
  }
  bool at_end() const { return pos_ == text_.size(); }
  size_t pos() const { return pos_; }
  void reset(size_t pos) { pos_ = pos; }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

 private:
  template <class Test>
  bool take_if(Test test) {
    if (pos_ < text_.size() && test(text_[pos_])) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::string_view text_;
  size_t pos_ = 0;
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_digit_or_underscore(char c) { return is_digit(c) || c == '_'; }
bool is_hex_or_underscore(char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == '_'; }

/// [-+]?(0|[1-9][0-9_]*)
bool is_integer(std::string_view text) {
  number_scanner s(text);
  s.sign();
  if (s.take('0')) return s.at_end();
  return is_digit(s.peek()) && s.run(is_digit_or_underscore) && s.at_end();
}

/// [-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?
bool is_number(std::string_view text) {
  number_scanner s(text);
  s.sign();
  if (s.take('.')) {
    if (!s.run(is_digit)) return false;
  } else {
    if (!is_digit(s.peek()) || !s.run(is_digit_or_underscore)) return false;
    if (s.take('.')) s.run(is_digit_or_underscore, 0);
  }
  if (s.take('e') || s.take('E')) {
    s.sign();
    if (!s.run(is_digit)) return false;
  }
  return s.at_end();
}

// A plain scalar's value as YAML 1.1 reads it (PyYAML, which Determined uses): booleans with their
// yes/no/on/off spellings, integers, floats (".inf", "1e-4" too) and strings; null is nothing.
std::optional<std::string> scalar_value(const YAML::Node& node) {
  if (node.IsNull()) return std::nullopt;
  const auto& text = node.Scalar();
  if (node.Tag() == "!") return quoted(text);  // quoted in the YAML: a string whatever it looks like
  if (one_of(text, {"~", "null", "Null", "NULL"})) return std::nullopt;
  if (one_of(text, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})) return "true";
  if (one_of(text, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})) return "false";
  auto digits = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    return s;
  };
  if (is_integer(text)) {
    auto s = digits(text);
    return s[0] == '+' ? s.substr(1) : s;
  }
  if (text.size() > 2 && text.compare(0, 2, "0x") == 0 &&
      std::all_of(text.begin() + 2, text.end(), is_hex_or_underscore)) {
    const auto hex = digits(text.substr(2));
    if (!hex.empty() && hex.size() <= 15)  // "0x_" has no digit; 15 fit an int64
      return std::to_string(std::stoll(hex, nullptr, 16));
  }
  for (std::string_view sign : {"", "+", "-"})
    for (std::string_view word : {".inf", ".Inf", ".INF"})
      if (text == std::string(sign) + std::string(word)) return sign == "-" ? "-inf" : "inf";
  if (one_of(text, {".nan", ".NaN", ".NAN"})) return "nan";
  if (is_number(text)) {
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
    count(mark, path.size());
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
      if (auto text = inline_value(value, path.size() + 1)) line(key_of(key) + " = ", *text, entry.first.Mark(), value.Mark());
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
    if (key.Scalar().size() > max_key_bytes)
      throw error_at(source_path_, key.Mark(), "a key of " + std::to_string(key.Scalar().size()) +
                                                   " bytes is longer than det's limit of " + std::to_string(max_key_bytes));
    return key.Scalar();
  }

  // One more value at `depth`: aliases can make a small document name a node any number of times,
  // so the values are counted as they are written out, not as they are parsed.
  void count(const YAML::Mark& mark, size_t depth) {
    if (depth > max_nesting_depth)
      throw error_at(source_path_, mark, "nests more than " + std::to_string(max_nesting_depth) + " levels deep");
    if (++values_ > max_document_values)
      throw error_at(source_path_, mark, "the config expands to more than " + std::to_string(max_document_values) +
                                             " values (YAML aliases repeat what they name)");
  }

  // A list of tables: written as [[...]] sections, so that their own keys have lines of their own.
  static bool tables_only(const YAML::Node& node) {
    if (!node.IsSequence() || node.size() == 0) return false;
    for (const auto& item : node)
      if (!item.IsMap()) return false;
    return true;
  }

  std::optional<std::string> inline_value(const YAML::Node& node, size_t depth) {
    count(node.Mark(), depth);
    if (node.IsScalar() && node.Scalar().size() > max_scalar_bytes)
      throw error_at(source_path_, node.Mark(), "a value of " + std::to_string(node.Scalar().size()) +
                                                    " bytes is longer than det's limit of " + std::to_string(max_scalar_bytes));
    if (node.IsScalar() || node.IsNull()) return scalar_value(node);
    if (node.IsSequence()) {
      std::string out = "[";
      for (const auto& item : node) {
        auto value = inline_value(item, depth + 1);
        if (!value) throw error_at(source_path_, item.Mark(), "a list cannot hold null: TOML has no null");
        out += (out.size() > 1 ? ", " : "") + *value;
      }
      return out + "]";
    }
    std::string out = "{";
    for (const auto& entry : node) {
      if (auto value = inline_value(entry.second, depth + 1))
        out += (out.size() > 1 ? ", " : " ") + key_of(key_text(entry.first)) + " = " + *value;
    }
    return out + (out.size() > 1 ? " }" : "}");
  }

  std::string_view source_path_;
  size_t values_ = 0;
};

struct converted {
  std::string toml;
  line_marks marks;
};

converted convert(std::string_view yaml_text, std::string_view source_path) {
  check_document_shape(yaml_text, source_path);
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
  while (std::getline(in, line)) {
    const auto rest = line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : std::string();
    // "LINE:COLUMN:" at the start of the rest, each at most 9 digits (the readers' positions).
    size_t line_end = 0, column_end = 0;
    while (line_end < rest.size() && line_end < 9 && is_digit(rest[line_end])) ++line_end;
    if (line_end > 0 && line_end < rest.size() && rest[line_end] == ':') {
      column_end = line_end + 1;
      while (column_end < rest.size() && column_end - line_end <= 9 && is_digit(rest[column_end])) ++column_end;
    }
    if (column_end > line_end + 1 && column_end < rest.size() && rest[column_end] == ':') {
      const auto toml_line = static_cast<size_t>(std::stoul(rest.substr(0, line_end)));
      const auto toml_column = static_cast<size_t>(std::stoul(rest.substr(line_end + 1, column_end - line_end - 1)));
      if (toml_line >= 1 && toml_line <= marks.size()) {
        const auto& mark = marks[toml_line - 1];
        const auto& yaml = toml_column < mark.value_column ? mark.key : mark.value;
        line = prefix + std::to_string(yaml.line + 1) + ":" + std::to_string(yaml.column + 1) + ":" + rest.substr(column_end + 1);
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
    check_document_shape(text, "");
  } catch (const config_error&) {
    return false;  // read as TOML, whose reader says what is wrong with it
  }
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
