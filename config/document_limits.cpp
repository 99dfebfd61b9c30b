#include "config/document_limits.hpp"

#include <string>

#include "config/config_error.hpp"

namespace det::config {

namespace {

[[noreturn]] void too_deep(std::string_view source_path, size_t line, size_t column) {
  throw config_error(std::string(source_path) + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": nests more than " + std::to_string(max_nesting_depth) + " levels deep");
}

bool starts_token(char before) {
  return before == '\n' || before == ' ' || before == '\t' || before == ':' || before == '-' || before == '[' ||
         before == '{' || before == ',' || before == '=';
}

}  // namespace

void check_document_shape(std::string_view text, std::string_view source_path) {
  if (text.size() > max_document_bytes)
    throw config_error(std::string(source_path) + ": the config is " + std::to_string(text.size()) +
                       " bytes; det reads configs of at most " + std::to_string(max_document_bytes) + " bytes");
  // Both parsers nest recursively, one level a bracket (YAML flow collections, TOML arrays and
  // inline tables) or a dotted key part (TOML's [a.b.c] and a.b.c = 1, a table each): a
  // conservative scan, brackets and dots outside quotes and comments, refuses what nests deeper
  // than det reads before either parser sees it. A quote opens only where a token starts (not in
  // "it's") and ends with its line at the latest, so no quote hides the rest of the document.
  size_t depth = 0, dots = 0, line = 1, column = 0;
  char quote = 0, before = '\n';
  bool comment = false, in_key = true;
  for (char c : text) {
    ++column;
    if (c == '\n') {
      ++line, column = 0, dots = 0, quote = 0, comment = false, in_key = true, before = c;
      continue;
    }
    if (comment) continue;
    if (quote) {
      if (c == quote) quote = 0;
    } else if ((c == '"' || c == '\'') && starts_token(before)) {
      quote = c;
    } else if (c == '#' && (before == '\n' || before == ' ' || before == '\t')) {
      comment = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_nesting_depth) too_deep(source_path, line, column);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == '=' || (c == ':' && in_key)) {
      in_key = false;
    } else if (c == '.' && in_key && ++dots > max_nesting_depth) {
      too_deep(source_path, line, column);
    }
    before = c;
  }
}

}  // namespace det::config
