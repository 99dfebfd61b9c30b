#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "node/log.hpp"

namespace {

// What `write` puts on stderr, read back from a file stderr points at meanwhile.
std::string stderr_of(void (*write)()) {
  char path[] = "/tmp/det-log-test-XXXXXX";
  const int file = ::mkstemp(path);
  REQUIRE(file >= 0);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(file, 2);
  write();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(file);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  return text.str();
}

} // namespace

TEST_CASE("a JSON log line parses whatever its message holds: quotes, lines, control bytes, bytes that are not UTF-8") {
  const auto text = stderr_of([] {
    det::logs::configure({det::config::log_level::info, det::config::log_format::json});
    det::logs::info(det::logs::component::agent, "a \"quoted\" path\n/tmp/\xff\xfe\x01 and caf\xc3\xa9 {}");
    det::logs::debug(det::logs::component::agent, "below the level");
    det::logs::configure({});
  });
  std::istringstream lines(text);
  std::string line;
  REQUIRE(std::getline(lines, line));
  const auto parsed = nlohmann::json::parse(line);  // strict: throws on a bad escape or bad UTF-8
  CHECK(parsed["level"] == "info");
  CHECK(parsed["component"] == "agent");
  CHECK(parsed["message"] == "a \"quoted\" path\n/tmp/\xef\xbf\xbd\xef\xbf\xbd\x01 and caf\xc3\xa9 {}");
  CHECK_FALSE(std::getline(lines, line));  // the debug line was left out
}

TEST_CASE("a text log line has its time, level and component") {
  const auto text = stderr_of([] {
    det::logs::configure({det::config::log_level::warning, det::config::log_format::text});
    det::logs::info(det::logs::component::master, "left out");
    det::logs::warn(det::logs::component::storage, "kept");
    det::logs::configure({});
  });
  CHECK(text.find("left out") == std::string::npos);
  CHECK(text.find(" warning storage: kept\n") != std::string::npos);
  CHECK(text.size() > 24);
  CHECK(text[4] == '-');
  CHECK(text[23] == 'Z');
}

TEST_CASE("a text log message cannot pass off a line of its own: its next lines are indented, control bytes escaped") {
  const auto text = stderr_of([] {
    det::logs::configure({det::config::log_level::info, det::config::log_format::text});
    det::logs::warn(det::logs::component::master,
                    "refused agent evil\n2026-11-28T00:00:00.000Z info master: admin logged in\r\x1b[2J\tcaf\xc3\xa9");
    det::logs::configure({});
  });
  std::istringstream lines(text);
  std::string line;
  REQUIRE(std::getline(lines, line));
  CHECK(line.find(" warning master: refused agent evil") != std::string::npos);
  REQUIRE(std::getline(lines, line));
  CHECK(line == "    2026-11-28T00:00:00.000Z info master: admin logged in\\r\\x1b[2J\tcaf\xc3\xa9");
  CHECK_FALSE(std::getline(lines, line));
}
