#include <doctest/doctest.h>

#include "master/http/body_budget.hpp"

using det::runtime::body_budget;

TEST_CASE("request bodies are held to a total over all connections, and give it back when answered") {
  body_budget budget(100);
  auto first = budget.reserve(60);
  REQUIRE(first);
  CHECK(budget.in_use() == 60);
  CHECK_FALSE(budget.reserve(41));  // more than is left: refused, and nothing is taken
  CHECK(budget.in_use() == 60);
  auto second = budget.reserve(40);
  REQUIRE(second);
  CHECK_FALSE(budget.reserve(1));
  first.reset();
  CHECK(budget.in_use() == 40);
  CHECK(budget.reserve(60));  // taken and given back at once
  CHECK(budget.in_use() == 40);
  CHECK_FALSE(budget.reserve(101));
}
