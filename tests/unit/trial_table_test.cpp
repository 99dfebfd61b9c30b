// The per-trial values a searcher looks up at every event and snapshots in id order
// (searcher/trial_table.hpp).
#include "searcher/trial_table.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace {

std::vector<std::pair<int64_t, int>> entries(const det::searcher::trial_table<int>& table) {
  std::vector<std::pair<int64_t, int>> read;
  table.for_each([&read](int64_t id, int value) { read.emplace_back(id, value); });
  return read;
}

} // namespace

TEST_CASE("a trial table holds one value per id and reads them in increasing id order") {
  det::searcher::trial_table<int> table;
  table[5] = 50;
  table[9] = 90;
  table[7] = 70;
  table[9] += 1;
  CHECK(table.size() == 3);
  CHECK(entries(table) == std::vector<std::pair<int64_t, int>>{{5, 50}, {7, 70}, {9, 91}});
  REQUIRE(table.find(7) != nullptr);
  CHECK(*table.find(7) == 70);
  CHECK(table.find(6) == nullptr);  // below the largest id, never given a value
  CHECK(table.find(10) == nullptr);
  CHECK(table[6] == 0);  // default-constructed on first use
  CHECK(table.size() == 4);
}

TEST_CASE("ids no search hands out (negative, or far beyond every id seen) keep their values and their order") {
  det::searcher::trial_table<int> table;
  table[3] = 3;
  table[-4] = -4;
  table[int64_t{1} << 62] = 62;
  table[1'000'000] = 1;
  CHECK(table.size() == 4);
  CHECK(entries(table) == std::vector<std::pair<int64_t, int>>{
                              {-4, -4}, {3, 3}, {1'000'000, 1}, {int64_t{1} << 62, 62}});
  // Ids handed out in order reach the stray one: it moves into place and keeps its value.
  for (int64_t id = 4; id < 1'000'000; ++id) table[id] = 0;
  CHECK(table.size() == 1'000'000);  // 4 to 999,999, and the four above
  REQUIRE(table.find(1'000'000) != nullptr);
  CHECK(*table.find(1'000'000) == 1);
  table[1'000'000] = 2;
  CHECK(*table.find(1'000'000) == 2);
  CHECK(table.size() == 1'000'000);
  CHECK(*table.find(int64_t{1} << 62) == 62);
  CHECK(*table.find(-4) == -4);
}

TEST_CASE("ids spread ever further apart stay out of the vector, which holds at most twice the values") {
  det::searcher::trial_table<int> table;
  int64_t id = 1;
  for (int i = 0; i < 50; ++i, id = 2 * id + 1000) table[id] = i;  // each just inside twice the last;
  // a vector that followed them would need 2^50 slots
  CHECK(table.size() == 50);
  int read = 0;
  table.for_each([&read](int64_t, int value) { CHECK(value == read++); });
  CHECK(read == 50);
}

TEST_CASE("ids their owner handed out go in the vector however sparse, and keep their order with the rest") {
  det::searcher::trial_table<int> table;
  table[1 << 20] = 7;  // stray: far beyond the one value held
  for (int64_t id = 1; id <= 50; ++id) table.issued(id * 1000, 100'000) = static_cast<int>(id);
  table.issued(200'000, 100'000) = -1;  // not below the end given: kept aside like any stray id
  CHECK(table.size() == 52);
  std::vector<int64_t> ids;
  table.for_each([&ids](int64_t id, int) { ids.push_back(id); });
  CHECK(std::is_sorted(ids.begin(), ids.end()));
  CHECK(ids.front() == 1000);
  CHECK(ids.back() == 1 << 20);
  CHECK(*table.find(50'000) == 50);
  CHECK(*table.find(200'000) == -1);
}
