#pragma once

// Internal to config/: reading a config file from disk.

#include <string>

namespace det::config::detail {

/// The whole file at `path`; throws config_error "PATH: sentence" when it cannot be read.
std::string read_config_file(const std::string& path);

} // namespace det::config::detail
