// The trial id sets a searcher asks about at every event and snapshots in order (searcher/id_set.hpp).
#include "searcher/id_set.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

TEST_CASE("an id set reads in increasing order, once each, whatever order its ids came in") {
  det::searcher::id_set ids;
  CHECK(ids.insert(5));
  CHECK(ids.insert(9));
  CHECK(std::vector<int64_t>(ids.begin(), ids.end()) == std::vector<int64_t>{5, 9});
  CHECK(ids.insert(7));  // after a read: merged into its place at the next
  CHECK_FALSE(ids.insert(9));
  CHECK_FALSE(ids.insert(7));
  CHECK(ids.insert(1));
  CHECK(std::vector<int64_t>(ids.begin(), ids.end()) == std::vector<int64_t>{1, 5, 7, 9});
  CHECK(std::vector<int64_t>(ids.begin(), ids.end()) == std::vector<int64_t>{1, 5, 7, 9});
  CHECK(ids.contains(7));
  CHECK_FALSE(ids.contains(6));
  CHECK(ids.size() == 4);
  const std::vector<int64_t> read{8, 2, 8, 4};
  det::searcher::id_set restored(read.begin(), read.end());
  CHECK(std::vector<int64_t>(restored.begin(), restored.end()) == std::vector<int64_t>{2, 4, 8});
}
