#include "config/toml_reader.hpp"

#include "config/document_limits.hpp"

#include "config/config_error.hpp"
#include "config/duration.hpp"

#include <algorithm>
#include <limits>

namespace det::config::detail {

namespace {

// Levenshtein distance, to suggest the key a typo probably meant.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string expected_got(std::string_view expected, const toml::node& found) {
  return "expected " + std::string(expected) + ", got " + describe(found);
}

} // namespace

// -- diagnostics ------------------------------------------------------------------------------

diagnostics::diagnostics(std::string_view source_path) : source_path_(source_path) {}

void diagnostics::add(const toml::source_position& where, std::string_view key_path,
                      std::string_view sentence) {
  // A position of 0:0 (a value built by the parser, not read from text) still names the file.
  auto line = std::max<toml::source_index>(where.line, 1);
  auto column = std::max<toml::source_index>(where.column, 1);
  std::string text = source_path_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  if (!key_path.empty()) text += std::string(key_path) + ": ";
  text += sentence;
  entries_.push_back({{line, column}, std::move(text)});
}

void diagnostics::throw_if_any() const {
  if (entries_.empty()) return;
  auto sorted = entries_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const entry& a, const entry& b) {
    return a.where.line != b.where.line ? a.where.line < b.where.line : a.where.column < b.where.column;
  });
  std::string message;
  for (const auto& e : sorted) {
    if (!message.empty()) message += '\n';
    message += e.line;
  }
  throw config_error(message);
}

std::string describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

// -- table_reader -----------------------------------------------------------------------------

table_reader::table_reader(const toml::table& table, std::string path, diagnostics& diag)
    : table_(table), path_(std::move(path)), diag_(diag) {}

std::string table_reader::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

std::string_view table_reader::remember(std::string_view key) {
  return *read_keys_.emplace(key).first;
}

const toml::node* table_reader::read_node(std::string_view key) {
  return table_.get(remember(key));
}

std::optional<std::string> table_reader::read_string(std::string_view key) {
  const auto* node = read_node(key);
  if (!node) return std::nullopt;
  if (node->is_string()) return node->as_string()->get();
  error(key, expected_got("a string", *node));
  return std::nullopt;
}

std::optional<int64_t> table_reader::read_integer(std::string_view key) {
  const auto* node = read_node(key);
  if (!node) return std::nullopt;
  if (node->is_integer()) return node->as_integer()->get();
  error(key, expected_got("an integer", *node));
  return std::nullopt;
}

std::optional<double> table_reader::read_number(std::string_view key) {
  const auto* node = read_node(key);
  if (!node) return std::nullopt;
  if (node->is_number()) return node->value<double>();
  error(key, expected_got("a number", *node));
  return std::nullopt;
}

std::optional<bool> table_reader::read_boolean(std::string_view key) {
  const auto* node = read_node(key);
  if (!node) return std::nullopt;
  if (node->is_boolean()) return node->as_boolean()->get();
  error(key, expected_got("a boolean (true or false)", *node));
  return std::nullopt;
}

const toml::table* table_reader::read_table(std::string_view key) {
  const auto* node = read_node(key);
  if (!node) return nullptr;
  if (node->is_table()) return node->as_table();
  error(key, expected_got("a table", *node));
  return nullptr;
}

const toml::array* table_reader::read_array(std::string_view key) {
  const auto* node = read_node(key);
  if (!node) return nullptr;
  if (node->is_array()) return node->as_array();
  error(key, expected_got("an array", *node));
  return nullptr;
}

std::optional<int64_t> table_reader::read_integer_in(std::string_view key, int64_t lo, int64_t hi) {
  auto value = read_integer(key);
  if (!value || (*value >= lo && *value <= hi)) return value;
  // A bound that only guards the C++ type (int) is not worth mentioning while the other is broken.
  bool huge_hi = hi >= std::numeric_limits<int>::max();
  if (huge_hi && *value < lo)
    error(key, "must be at least " + std::to_string(lo) + ", got " + std::to_string(*value));
  else if (huge_hi)
    error(key, "must be at most " + std::to_string(hi) + ", got " + std::to_string(*value));
  else
    error(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                   std::to_string(*value));
  return std::nullopt;
}

void table_reader::missing(std::string_view key) {
  diag_.add(table_.source().begin, path_of(key), "required key is missing");
}

void table_reader::error(std::string_view key, std::string_view sentence) {
  const auto* node = table_.get(key);
  diag_.add(node ? node->source().begin : table_.source().begin, path_of(key), sentence);
}

void table_reader::error_here(std::string_view sentence) {
  diag_.add(table_.source().begin, path_, sentence);
}

void table_reader::ignore(std::initializer_list<std::string_view> keys) {
  for (auto key : keys) ignored_keys_.emplace(key);
}

void table_reader::refuse(std::initializer_list<std::string_view> keys, std::string_view why) {
  for (auto key : keys) {
    ignored_keys_.emplace(key);  // reported here, not again as unknown
    if (table_.contains(key))
      error(key, why);
  }
}

void table_reader::report_unknown_keys(std::string_view hint) {
  for (auto&& [key, node] : table_) {
    auto name = key.str();
    if (read_keys_.count(name) || ignored_keys_.count(name)) continue;
    std::string sentence = "unknown key";
    std::string_view best;
    size_t best_distance = 3;  // more than two edits away is not a typo of a known key
    for (const auto& known : read_keys_) {
      // Lengths that differ by the best distance or more cannot be closer: skip the O(n·m) table.
      auto length_gap = name.size() > known.size() ? name.size() - known.size() : known.size() - name.size();
      if (length_gap >= best_distance) continue;
      auto distance = edit_distance(name, known);
      if (distance < best_distance) best = known, best_distance = distance;
    }
    if (!best.empty()) sentence += "; did you mean \"" + std::string(best) + "\"?";
    if (!hint.empty()) sentence += "; " + std::string(hint);
    diag_.add(key.source().begin, path_of(name), sentence);
  }
}

// -- lengths ----------------------------------------------------------------------------------

std::optional<length> read_length(table_reader& reader, std::string_view key, int64_t min_value) {
  const auto* node = reader.read_node(key);
  if (!node) return std::nullopt;
  const auto* table = node->as_table();
  if (!table) {
    reader.error(key, "expected a length such as { batches = 100 }, got " + describe(*node));
    return std::nullopt;
  }
  table_reader fields(*table, reader.path_of(key), reader.diag());
  std::optional<length> result;
  int units_given = 0;
  for (auto unit : {length_unit::batches, length_unit::records, length_unit::epochs}) {
    auto value = fields.read_integer_in(to_string(unit), min_value, std::numeric_limits<int64_t>::max());
    if (table->contains(to_string(unit))) ++units_given;
    if (value) result = length{unit, *value};
  }
  fields.report_unknown_keys("a length has exactly one of batches, records or epochs");
  if (units_given != 1) {
    reader.error(key, "a length has exactly one of batches, records or epochs, as in { batches = 100 }");
    return std::nullopt;
  }
  return result;
}

namespace {

// Keys and strings longer than det reads, and tables nested deeper (toml++ stops at 256 levels;
// det's configs need a handful). Recursive, but no deeper than toml++ parsed.
void check_sizes(const toml::node& node, const std::string& path, size_t depth, diagnostics& diag) {
  if (depth > max_nesting_depth) {
    diag.add(node.source().begin, path, "nests more than " + std::to_string(max_nesting_depth) + " levels deep");
    return;
  }
  if (const auto* s = node.as_string(); s && s->get().size() > max_scalar_bytes) {
    diag.add(node.source().begin, path, "a string of " + std::to_string(s->get().size()) +
                                            " bytes is longer than det's limit of " + std::to_string(max_scalar_bytes));
  } else if (const auto* table = node.as_table()) {
    for (auto&& [key, value] : *table) {
      if (key.str().size() > max_key_bytes) {
        diag.add(key.source().begin, path, "a key of " + std::to_string(key.str().size()) +
                                               " bytes is longer than det's limit of " + std::to_string(max_key_bytes));
        continue;
      }
      check_sizes(value, path.empty() ? std::string(key.str()) : path + "." + std::string(key.str()), depth + 1, diag);
    }
  } else if (const auto* array = node.as_array()) {
    for (const auto& item : *array) check_sizes(item, path, depth + 1, diag);
  }
}

} // namespace

toml::table parse_document(std::string_view toml_text, std::string_view source_path, diagnostics& diag) {
  check_document_shape(toml_text, source_path);
  toml::table document;
  try {
    document = toml::parse(toml_text, source_path);
  } catch (const toml::parse_error& e) {
    diag.add(e.source().begin, "", "TOML syntax error: " + std::string(e.description()));
    diag.throw_if_any();
  }
  check_sizes(document, "", 0, diag);
  diag.throw_if_any();
  return document;
}

std::optional<int64_t> read_duration_s(table_reader& reader, std::string_view key, int64_t min,
                                       std::string_view expected) {
  const auto* node = reader.read_node(key);
  if (!node) return std::nullopt;
  std::optional<int64_t> seconds;
  if (node->is_integer()) seconds = node->as_integer()->get();
  if (node->is_string()) seconds = parse_duration_s(node->as_string()->get());
  if (seconds && *seconds >= min) return seconds;
  reader.error(key, expected);
  return std::nullopt;
}

std::optional<std::vector<std::string>> read_command(table_reader& reader, std::string_view key,
                                                     std::string_view example) {
  const auto* node = reader.read_node(key);
  if (!node) return std::nullopt;
  std::vector<std::string> command;
  if (node->is_string()) {
    command = {node->as_string()->get()};
  } else if (const auto* array = node->as_array(); array && array->is_homogeneous<std::string>()) {
    for (const auto& part : *array) command.push_back(part.as_string()->get());
  } else {
    reader.error(key, "expected a string or an array of strings, got " + describe(*node));
    return std::nullopt;
  }
  if (command.empty() || command.front().empty()) {
    reader.error(key, "must name what to run, such as " + std::string(example));
    return std::nullopt;
  }
  return command;
}

} // namespace det::config::detail
