#include <doctest/doctest.h>

#include "agent/unreported_exits.hpp"

namespace {

det::pb::ContainerExited exit_of(const std::string& allocation_id) {
  det::pb::ContainerExited e;
  e.set_allocation_id(allocation_id);
  return e;
}

} // namespace

TEST_CASE("the hello carries the exits there are; those that come before its welcome are sent after it") {
  det::agent::unreported_exits exits;
  exits.add(exit_of("1.1"));
  exits.add(exit_of("2.1"));
  det::pb::AgentHello hello;
  const auto carried = exits.carry(hello);
  REQUIRE(hello.exited_size() == 2);
  CHECK(hello.exited(0).allocation_id() == "1.1");
  exits.add(exit_of("3.1"));  // a worker ended while the hello was on its way
  const auto to_send = exits.welcomed(carried);
  REQUIRE(to_send.size() == 1);
  CHECK(to_send[0].allocation_id() == "3.1");
  det::pb::AgentHello next;
  CHECK(exits.carry(next) == 0);  // nothing is reported twice
}

TEST_CASE("a welcome for an older hello sends what a newer one carried rather than losing it") {
  det::agent::unreported_exits exits;
  det::pb::AgentHello first;
  const auto carried_first = exits.carry(first);  // nothing yet
  exits.add(exit_of("1.1"));
  det::pb::AgentHello second;
  CHECK(exits.carry(second) == 1);
  const auto to_send = exits.welcomed(carried_first);
  REQUIRE(to_send.size() == 1);
  CHECK(to_send[0].allocation_id() == "1.1");
  CHECK(exits.welcomed(1).empty());
}
