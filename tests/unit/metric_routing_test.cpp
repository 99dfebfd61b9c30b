// Which metric writer a batch goes to: a trial's uncommitted batches share one writer, so that
// its reports commit in order; otherwise the least loaded writer takes it.

#include "master/persistence/metric_routing.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace det;

TEST_CASE("metric routing: a trial with nothing uncommitted goes to the writer with the fewest reports") {
  metric_routing routing{2};
  CHECK(routing.writer_for({1}) == 0u);
  routing.appended(0, {1}, 100);
  CHECK(routing.writer_for({2}) == 1u);
  routing.appended(1, {2}, 10);
  CHECK(routing.writer_for({3}) == 1u);
  CHECK(routing.uncommitted(0) == 100);
  CHECK(routing.uncommitted(1) == 10);
}

TEST_CASE("metric routing: a trial's batches stay on its writer until every one of them has settled") {
  metric_routing routing{2};
  routing.appended(0, {7}, 100);
  routing.appended(0, {7}, 100);
  routing.appended(1, {8}, 1);
  // Writer 1 has fewer reports, but trial 7 has uncommitted batches on writer 0.
  CHECK(routing.writer_for({7}) == 0u);
  routing.settled(0, {7}, 100);
  CHECK(routing.writer_for({7}) == 0u);
  routing.settled(0, {7}, 100);
  CHECK(routing.uncommitted(0) == 0);
  CHECK(routing.writer_for({7}) == 0u);  // free again: the least loaded writer, now 0
  routing.appended(0, {9}, 50);
  CHECK(routing.writer_for({7}) == 1u);
}

TEST_CASE("metric routing: a batch of trials uncommitted on different writers must wait for every commit") {
  metric_routing routing{2};
  routing.appended(0, {1}, 5);
  routing.appended(1, {2}, 5);
  CHECK(routing.writer_for({1, 2}) == std::nullopt);
  CHECK(routing.writer_for({1, 3}) == 0u);  // one bound trial decides
  CHECK_THROWS_AS(routing.appended(1, {1}, 5), std::logic_error);
  routing.settled(0, {1}, 5);
  routing.settled(1, {2}, 5);
  CHECK(routing.writer_for({1, 2}) == 0u);
  CHECK_THROWS_AS(metric_routing{0}, std::invalid_argument);
}
