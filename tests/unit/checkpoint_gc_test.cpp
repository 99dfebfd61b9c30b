// Checkpoint GC (determined-reference §7): the documentation's test vector.
#include "storage/checkpoint_gc.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace det;

namespace {

// T1: c1 null, c2 null, c3 0.6, c4 0.5, c5 0.4; T2: c6 null, c7 0.2, c8 0.3, c9 null, c10 null.
std::vector<storage::gc_candidate> documented() {
  std::vector<storage::gc_candidate> c;
  auto add = [&](int id, int64_t trial, std::optional<double> metric) {
    c.push_back(storage::gc_candidate{"c" + std::to_string(id), trial, id * 100, metric, id});
  };
  add(1, 1, std::nullopt);
  add(2, 1, std::nullopt);
  add(3, 1, 0.6);
  add(4, 1, 0.5);
  add(5, 1, 0.4);
  add(6, 2, std::nullopt);
  add(7, 2, 0.2);
  add(8, 2, 0.3);
  add(9, 2, std::nullopt);
  add(10, 2, std::nullopt);
  return c;
}

/// The checkpoints kept, as "c3 c7 ..." in id order.
std::string kept(int experiment_best, int trial_best, int trial_latest, std::set<std::string> keep = {}) {
  auto doomed = storage::checkpoints_to_delete(documented(), {experiment_best, trial_best, trial_latest}, true, keep);
  std::string text;
  for (const auto& c : documented())
    if (!doomed.count(c.uuid)) text += (text.empty() ? "" : " ") + c.uuid;
  return text;
}

} // namespace

TEST_CASE("checkpoint GC keeps what save_experiment_best, save_trial_best and save_trial_latest ask for") {
  CHECK(kept(0, 0, 0) == "");
  CHECK(kept(2, 0, 0) == "c7 c8");
  CHECK(kept(5, 0, 0) == "c3 c4 c5 c7 c8");
  CHECK(kept(9, 0, 0) == "c3 c4 c5 c7 c8");
  CHECK(kept(0, 1, 0) == "c5 c7");
  CHECK(kept(0, 3, 0) == "c3 c4 c5 c7 c8");
  CHECK(kept(0, 0, 1) == "c5 c10");
  CHECK(kept(2, 1, 0) == "c5 c7 c8");
  CHECK(kept(0, 1, 1) == "c5 c7 c10");  // the defaults: the best and the latest of each trial
}

TEST_CASE("checkpoint GC never deletes a checkpoint another trial started from") {
  CHECK(kept(0, 0, 0, {"c2", "c9"}) == "c2 c9");
}

TEST_CASE("with larger metrics better, the best checkpoint is the largest") {
  auto doomed = storage::checkpoints_to_delete(documented(), {1, 0, 0}, false);
  CHECK(doomed.size() == 9);
  CHECK(doomed.count("c3") == 0);
}
