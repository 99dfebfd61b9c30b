#pragma once
// Internal to config/: the `[environment]`, `[[bind_mounts]]` and resource-limit keys that
// experiment and task configs share (config/environment_config.hpp).

#include "config/environment_config.hpp"
#include "config/toml_reader.hpp"

namespace det::config::detail {

/// Reads `[environment]` and `[[bind_mounts]]` of the document root into `env`.
void read_environment(table_reader& root, environment_config& env);

/// Reads shm_size, memory_limit and cpu_limit of an open `[resources]` table into `env`.
void read_resource_limits(table_reader& resources, environment_config& env);

/// "NAME=VALUE" with NAME a shell variable name; nullopt otherwise.
std::optional<std::pair<std::string, std::string>> variable_of(const std::string& text);

} // namespace det::config::detail
