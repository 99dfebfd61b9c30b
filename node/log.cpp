#include "node/log.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace det::logs {
namespace {

constexpr std::array<component, 8> components{component::master, component::experiment, component::trial,
                                              component::pool,   component::agent,      component::worker,
                                              component::http,   component::storage};

spdlog::level::level_enum spdlog_level(config::log_level level) {
  switch (level) {
    case config::log_level::debug: return spdlog::level::debug;
    case config::log_level::info: return spdlog::level::info;
    case config::log_level::warning: return spdlog::level::warn;
    case config::log_level::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

// How many bytes of valid UTF-8 start `text` at `i` (a sequence of 1 to 4), or 0.
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
  if (length == 0 || i + length > text.size() || (length == 2 && lead < 0xc2)) return 0;
  for (std::size_t k = 1; k < length; ++k)
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  if (length == 3) {
    const unsigned code = ((lead & 0xfu) << 12) | ((byte(i + 1) & 0x3fu) << 6);
    if (code < 0x800 || (code >= 0xd800 && code <= 0xdfff)) return 0;  // overlong, or a surrogate
  }
  if (length == 4) {
    const unsigned code = ((lead & 0x7u) << 18) | ((byte(i + 1) & 0x3fu) << 12);
    if (code < 0x10000 || code > 0x10ffff) return 0;
  }
  return length;
}

// A message as a JSON string's contents: spdlog writes %v as it is. Bytes that are not UTF-8 (a
// path, a program's output) become U+FFFD, so that every line parses.
std::string json_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      if (const auto length = utf8_sequence(text, i)) {
        out.append(text.substr(i, length));
        i += length - 1;
      } else {
        out += "\\ufffd";
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xf];
          out += hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out;
}

// A message as text lines that no user can pass off as lines of their own: a name a user chose
// ("refused agent ...") could otherwise carry a newline and what reads as a new log line. Every
// line after the first is indented, where a log line begins with its time; a carriage return and
// other control bytes (a terminal's escapes) are written as escapes. Tabs and UTF-8 stay as they are.
bool needs_escape(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7f;
}
std::string indented_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\n    ";
    } else if (c == '\r') {
      out += "\\r";
    } else if (needs_escape(c)) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

struct loggers {
  std::array<std::shared_ptr<spdlog::logger>, components.size()> by_component;
  std::atomic<config::log_level> level{config::log_level::info};
  std::atomic<config::log_format> format{config::log_format::text};

  loggers() {
    // Unbuffered stderr shared by every component, so that lines keep their order.
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    for (auto c : components) {
      auto& logger = by_component[static_cast<std::size_t>(c)];
      logger = std::make_shared<spdlog::logger>(std::string(to_string(c)), sink);
      logger->flush_on(spdlog::level::trace);
    }
    apply();
  }

  void apply() {
    const bool json = format == config::log_format::json;
    // spdlog names the levels debug, info, warning and error (as logrus does in Determined's logs).
    const char* pattern = json ? R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","component":"%n","message":"%v"})"
                               : "%Y-%m-%dT%H:%M:%S.%eZ %l %n: %v";
    for (auto& logger : by_component) {
      logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(pattern, spdlog::pattern_time_type::utc));
      logger->set_level(spdlog_level(level));
    }
  }
};

// Never destroyed: a detached thread may log while the process ends.
loggers& the_loggers() {
  static auto* instance = new loggers;
  return *instance;
}

} // namespace

void configure(const config::log_settings& settings) {
  auto& l = the_loggers();
  l.level = settings.level;
  l.format = settings.format;
  l.apply();
}

bool enabled(config::log_level level) { return level >= the_loggers().level.load(); }

void write(component from, config::log_level level, std::string_view message) {
  auto& l = the_loggers();
  if (!enabled(level)) return;
  auto& logger = *l.by_component[static_cast<std::size_t>(from)];
  if (l.format == config::log_format::json)
    logger.log(spdlog_level(level), json_escaped(message));
  else if (std::none_of(message.begin(), message.end(), needs_escape))
    logger.log(spdlog_level(level), message);  // most lines: written as they are, without a copy
  else
    logger.log(spdlog_level(level), indented_lines(message));
}

std::string_view to_string(component from) {
  switch (from) {
    case component::master: return "master";
    case component::experiment: return "experiment";
    case component::trial: return "trial";
    case component::pool: return "pool";
    case component::agent: return "agent";
    case component::worker: return "worker";
    case component::http: return "http";
    case component::storage: return "storage";
  }
  return "master";
}

} // namespace det::logs
