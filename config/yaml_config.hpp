#pragma once
// Determined's YAML experiment configs, as they are: turned into det's TOML, then read by the same
// readers, so a YAML file is checked exactly as a TOML one and its errors name the YAML file's
// lines. TOML stays det's stored form.

#include <string>
#include <string_view>

#include "config/experiment_config.hpp"

namespace det::config {

/// Whether `path` names a YAML file (.yaml or .yml).
bool is_yaml_path(std::string_view path);

/// Whether config text that came without a file name is Determined's YAML rather than det's TOML:
/// it is not TOML and reads as a YAML mapping (Determined's clients send YAML with no path).
bool is_yaml_text(std::string_view text);

/// The TOML text of a YAML experiment config. Throws config_error "FILE:LINE:COLUMN: ..." for YAML
/// that does not parse or that TOML cannot hold (a list of lists of tables, a key that is not a
/// string).
std::string yaml_to_toml(std::string_view yaml_text, std::string_view source_path);

/// Parses a YAML experiment config; every error names the YAML file's line and column.
experiment_config parse_yaml_experiment_config(std::string_view yaml_text, std::string_view source_path);

/// The experiment config at `path` as det's TOML text: a TOML file as it is, a YAML file converted
/// (after checking it). Throws config_error for an unreadable or invalid file.
std::string experiment_config_text(const std::string& path);

/// TOML config text as YAML, for `det experiment describe --yaml`.
std::string toml_to_yaml(std::string_view toml_text);

}  // namespace det::config
