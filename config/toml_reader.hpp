#pragma once

// Internal to config/: the one place that turns toml++ nodes into checked values and errors.

#include "config/length.hpp"

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace det::config::detail {

/// The node's value when it is a TOML integer. toml++'s value<int64_t>() also converts a whole
/// float, and for one beyond int64_t's range (9E43) that conversion was undefined behaviour
/// (fuzz_task_config found it).
inline std::optional<int64_t> integer_value(const toml::node& node) {
  if (const auto* integer = node.as_integer()) return integer->get();
  return std::nullopt;
}

/// Collects every problem found in one file, so that a user fixes them all in one pass.
class diagnostics {
 public:
  explicit diagnostics(std::string_view source_path);

  /// Records "FILE:LINE:COLUMN: key_path: sentence"; an empty key path is left out.
  void add(const toml::source_position& where, std::string_view key_path, std::string_view sentence);

  /// Throws config_error with every recorded line, sorted by position; returns if there is none.
  void throw_if_any() const;

 private:
  struct entry {
    toml::source_position where;
    std::string line;
  };

  std::string source_path_;
  std::vector<entry> entries_;
};

/// Parses a whole TOML document; a syntax error becomes a config_error at its position.
toml::table parse_document(std::string_view toml_text, std::string_view source_path, diagnostics& diag);

/// How an error names the kind of a value it found: "an integer", "a string", ...
std::string describe(const toml::node& node);

/// Reads one TOML table with type checks, remembering which keys were asked for so that
/// report_unknown_keys() can name every key nobody knows (typos, keys of another searcher).
class table_reader {
 public:
  /// `path` is the table's dotted key path ("" for the document root).
  table_reader(const toml::table& table, std::string path, diagnostics& diag);

  const toml::table& source_table() const { return table_; }
  diagnostics& diag() const { return diag_; }
  /// The dotted path of `key` inside this table, as errors print it.
  std::string path_of(std::string_view key) const;

  /// The value under `key`, or nullptr; either way `key` counts as known.
  const toml::node* read_node(std::string_view key);
  std::optional<std::string> read_string(std::string_view key);
  std::optional<int64_t> read_integer(std::string_view key);
  /// An integer or a float, as TOML users write `1` for `1.0`.
  std::optional<double> read_number(std::string_view key);
  std::optional<bool> read_boolean(std::string_view key);
  const toml::table* read_table(std::string_view key);
  const toml::array* read_array(std::string_view key);
  /// read_integer() that also reports a value outside [lo, hi].
  std::optional<int64_t> read_integer_in(std::string_view key, int64_t lo, int64_t hi);

  /// Reports that the required `key` is absent, at the start of this table.
  void missing(std::string_view key);
  /// Reports a problem with the value under `key`, at that value (or at the table if absent).
  void error(std::string_view key, std::string_view sentence);
  /// Reports a problem with this table as a whole, at its start.
  void error_here(std::string_view sentence);

  /// Determined keys that det accepts but does not act on yet.
  void ignore(std::initializer_list<std::string_view> keys);
  /// Determined keys that det does not implement and must not accept silently: each one present is
  /// reported with `why`.
  void refuse(std::initializer_list<std::string_view> keys, std::string_view why);
  /// Reports each key that no read_* or ignore() named; `hint` ends the sentence when not empty.
  void report_unknown_keys(std::string_view hint = {});

 private:
  std::string_view remember(std::string_view key);

  const toml::table& table_;
  std::string path_;
  diagnostics& diag_;
  std::set<std::string, std::less<>> read_keys_;
  std::set<std::string, std::less<>> ignored_keys_;
};

/// Reads a length (`{ batches = N }`, `{ records = N }` or `{ epochs = N }`) under `key`; N must be
/// at least `min_value`.
std::optional<length> read_length(table_reader& reader, std::string_view key, int64_t min_value);

/// `key`: seconds as an integer or a duration string ("25s", "1m30s", "7d"), at least `min`;
/// nullopt when it is not set, or (with `expected` reported) when it is set to anything else.
std::optional<int64_t> read_duration_s(table_reader& reader, std::string_view key, int64_t min,
                                       std::string_view expected);

/// `key`: a command as a string or an array of strings, not empty; nullopt when it is not set, or
/// (reported, `example` naming what it should look like) when it is not a command.
std::optional<std::vector<std::string>> read_command(table_reader& reader, std::string_view key,
                                                     std::string_view example);

/// Any TOML value as JSON text: tables become objects, dates and times strings.
std::string to_json_text(const toml::node& node);

} // namespace det::config::detail
