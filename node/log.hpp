#pragma once
// det-node's log: one line (or one JSON object) per event on stderr, each from a component and at
// a level, written through spdlog (libspdlog-dev). What a trial or task prints is not logged here:
// it travels to the database as its task log.
//
//   logs::info(logs::component::agent, "agent-0 registered with master 0.1.0 with 4 slots");
//   2026-11-28T14:57:12.204Z info agent: agent-0 registered with master 0.1.0 with 4 slots
//   {"time":"2026-11-28T14:57:12.204Z","level":"info","component":"agent","message":"agent-0 registered..."}
//
// This header includes no spdlog: callers build the message as a string.

#include <cstdint>
#include <string_view>

#include "config/log_settings.hpp"

namespace det::logs {

enum class component : uint8_t { master, experiment, trial, pool, agent, worker, http, storage };

/// Before anything is logged; until then (and in tests) lines are text at level info.
void configure(const config::log_settings& settings);

/// Whether a message at `level` would be written: to skip building one that would not.
bool enabled(config::log_level level);

void write(component from, config::log_level level, std::string_view message);

inline void debug(component from, std::string_view message) { write(from, config::log_level::debug, message); }
inline void info(component from, std::string_view message) { write(from, config::log_level::info, message); }
inline void warn(component from, std::string_view message) { write(from, config::log_level::warning, message); }
inline void error(component from, std::string_view message) { write(from, config::log_level::error, message); }

/// The names --log-level and --log-format take, for their help.
std::string_view to_string(component from);

} // namespace det::logs
