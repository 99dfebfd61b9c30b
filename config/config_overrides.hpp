#pragma once
// Determined's `--config KEY=VALUE` (`det cmd run -c resources.slots=2`): a config file with
// values set from the command line, as TOML text that the master reads like any config.

#include <string>
#include <string_view>
#include <vector>

namespace det::config {

/// `toml_text` with each "KEY=VALUE" of `overrides` set in order: a dotted KEY names nested
/// tables (made where missing); VALUE is read as a TOML value (a number, a boolean, an array, a
/// quoted string) or else taken as the string it is. Throws config_error naming the override
/// that cannot apply (no '=', a KEY through a value that is not a table) or the file's syntax error.
std::string with_overrides(std::string_view toml_text, std::string_view source_path,
                           const std::vector<std::string>& overrides);

/// `text` as a TOML basic string, quoted and escaped: how a command line's words become an
/// override's value.
std::string toml_string_literal(std::string_view text);

} // namespace det::config
