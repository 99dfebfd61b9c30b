#pragma once
// How det-node logs (`[log]` in the master's config, --log-level and --log-format on its command
// line): the least severe level written, and text lines or JSON objects (node/log.hpp).

#include <cstdint>
#include <optional>
#include <string_view>

namespace det::config {

enum class log_level : uint8_t { debug, info, warning, error };
enum class log_format : uint8_t { text, json };

struct log_settings {
  log_level level = log_level::info;
  log_format format = log_format::text;
};

/// "debug", "info", "warn" or "warning", "error" (Determined's names, as its master.yaml's log.level).
inline std::optional<log_level> log_level_named(std::string_view name) {
  if (name == "debug") return log_level::debug;
  if (name == "info") return log_level::info;
  if (name == "warn" || name == "warning") return log_level::warning;
  if (name == "error") return log_level::error;
  return std::nullopt;
}

inline std::optional<log_format> log_format_named(std::string_view name) {
  if (name == "text") return log_format::text;
  if (name == "json") return log_format::json;
  return std::nullopt;
}

inline constexpr std::string_view log_level_names = "debug, info, warn or error";
inline constexpr std::string_view log_format_names = "text or json";

} // namespace det::config
