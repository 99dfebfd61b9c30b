#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "master/http/route_pattern.hpp"

using det::runtime::route_capture;
using det::runtime::route_pattern;

namespace {

std::vector<route_capture> captures_of(const char* pattern, const std::string& path) {
  std::vector<route_capture> captures;
  if (!route_pattern(pattern).match(path, captures)) return {};
  return captures;
}

} // namespace

TEST_CASE("the gateway's route patterns capture as std::regex did") {
  auto c = captures_of(R"(/api/v1/experiments/(\d+)/labels/(.+))", "/api/v1/experiments/12/labels/a/b c");
  REQUIRE(c.size() == 3);
  CHECK(c[1].str() == "12");
  CHECK(c[2] == "a/b c");
  c = captures_of(R"(/api/v1/agents/([^/]+)/slots/(\d+)/(enable|disable))", "/api/v1/agents/agent-0/slots/3/disable");
  REQUIRE(c.size() == 4);
  CHECK(c[3] == "disable");
  CHECK(captures_of(R"(/api/v1/allocations/(\d+)\.\d+/signals/preemption)", "/api/v1/allocations/7.2/signals/preemption")[1] == "7");
  CHECK(captures_of("([0-9a-f-]{36})", "0123456789abcdef0123456789abcdef0123").size() == 2);
  CHECK(captures_of("([0-9a-f-]{36})", "0123456789abcdef0123456789abcdef012").empty());
  CHECK(captures_of(R"(/assets/([A-Za-z0-9_./-]+))", "/assets/js/app.min.js")[1] == "js/app.min.js");
  // Top-level alternation, as the web UI's pages are listed.
  const char* pages = R"(/|/login|/experiments/[^/]+|/models)";
  CHECK(!captures_of(pages, "/experiments/4").empty());
  CHECK(captures_of(pages, "/experiments/4/x").empty());
  CHECK(captures_of(pages, "/modelsx").empty());
  // Backtracking: the greedy class gives back what the rest needs.
  CHECK(captures_of(R"(/a/(.+)/b)", "/a/x/b/y/b")[1] == "x/b/y");
}

TEST_CASE("a path of a million characters is matched without exhausting the stack") {
  std::string digits(1'000'000, '7');
  CHECK(captures_of(R"(/api/v1/trials/(\d+)/logs)", "/api/v1/trials/" + digits + "/logs")[1].size() == digits.size());
  CHECK(captures_of(R"(/api/v1/trials/(\d+)/logs)", "/api/v1/trials/" + digits + "x/logs").empty());
  CHECK(captures_of(R"(/api/v1/labels/(.+))", "/api/v1/labels/" + std::string(1'000'000, '/')).size() == 2);
}

TEST_CASE("a pattern outside the supported syntax is refused when the route is added") {
  CHECK_THROWS_AS(route_pattern("(unclosed"), std::invalid_argument);
  CHECK_THROWS_AS(route_pattern("a+"), std::invalid_argument);  // only classes repeat
  CHECK_THROWS_AS(route_pattern("+"), std::invalid_argument);
}
