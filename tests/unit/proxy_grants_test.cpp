// Tickets and grants that open one task's service (master/tasks/proxy_grants.hpp): a ticket opens its
// own task once, and the grant it becomes speaks for its session and for that task only.

#include <doctest/doctest.h>

#include "master/tasks/proxy_grants.hpp"

using det::runtime::proxy_grants;

TEST_CASE("a ticket becomes a grant once, for its own task only") {
  proxy_grants grants;
  const auto ticket = grants.issue_ticket("task-a", "session-sha");
  CHECK_FALSE(grants.redeem(ticket, "task-b"));
  CHECK_FALSE(grants.redeem(ticket, "task-a"));  // spent by the attempt above
  const auto again = grants.issue_ticket("task-a", "session-sha");
  const auto grant = grants.redeem(again, "task-a");
  REQUIRE(grant);
  CHECK(*grant != again);
  CHECK_FALSE(grants.redeem(again, "task-a"));
  CHECK(grants.session_of(*grant, "task-a") == std::optional<std::string>("session-sha"));
  CHECK_FALSE(grants.session_of(*grant, "task-b"));
}

TEST_CASE("neither a ticket nor a grant is the other, nor is an unknown secret anything") {
  proxy_grants grants;
  const auto ticket = grants.issue_ticket("task-a", "session-sha");
  CHECK_FALSE(grants.session_of(ticket, "task-a"));
  const auto grant = grants.redeem(ticket, "task-a");
  REQUIRE(grant);
  CHECK_FALSE(grants.redeem(*grant, "task-a"));
  CHECK_FALSE(grants.session_of("made-up", "task-a"));
  CHECK_FALSE(grants.redeem("", "task-a"));
}
