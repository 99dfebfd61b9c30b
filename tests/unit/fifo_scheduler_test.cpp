#include <doctest/doctest.h>

#include "scheduler/fifo_first_fit.hpp"

using det::scheduler::fifo_first_fit;

TEST_CASE("fifo_first_fit places requests on the first agent with room") {
  fifo_first_fit s;
  s.add_agent("a", {0});
  s.add_agent("b", {0, 1});
  s.request("x", 1);
  s.request("y", 2);
  s.request("z", 1);
  auto out = s.schedule();
  REQUIRE(out.size() == 2);
  CHECK(out[0].allocation_id == "x");
  CHECK(out[0].agent_id == "a");
  CHECK(out[1].allocation_id == "y");
  CHECK(out[1].agent_id == "b");
  CHECK(out[1].slot_ids == std::vector<int>{0, 1});
  CHECK(s.queued() == 1);
  CHECK(s.free_slots() == 0);
}

TEST_CASE("fifo_first_fit never lets a later request overtake the head of the queue") {
  fifo_first_fit s;
  s.add_agent("a", {0, 1});
  s.request("big", 3);
  s.request("small", 1);
  CHECK(s.schedule().empty());
  s.add_agent("b", {0, 1, 2});
  auto out = s.schedule();
  REQUIRE(out.size() == 2);
  CHECK(out[0].allocation_id == "big");
  CHECK(out[0].agent_id == "b");
  CHECK(out[1].allocation_id == "small");
  CHECK(out[1].agent_id == "a");
}

TEST_CASE("fifo_first_fit frees slots on release and reports allocations lost with an agent") {
  fifo_first_fit s;
  s.add_agent("a", {0});
  s.request("x", 1);
  s.request("y", 1);
  CHECK(s.schedule().size() == 1);
  s.release("x");
  auto out = s.schedule();
  REQUIRE(out.size() == 1);
  CHECK(out[0].allocation_id == "y");
  auto lost = s.remove_agent("a");
  CHECK(lost == std::vector<std::string>{"y"});
  CHECK(s.total_slots() == 0);
  s.release("y");  // releasing a lost allocation is harmless
  CHECK(s.running() == 0);
}

TEST_CASE("fifo_first_fit cancels a queued request") {
  fifo_first_fit s;
  s.request("x", 1);
  s.release("x");
  CHECK(s.queued() == 0);
  s.add_agent("a", {0});
  CHECK(s.schedule().empty());
}
