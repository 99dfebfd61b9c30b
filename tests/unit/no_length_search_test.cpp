// Determined 0.38's single, random and grid searches without a length: each trial's process
// trains until it exits, and the search's progress is what the processes report.
#include "config/experiment_config.hpp"
#include "messages/searcher.pb.h"
#include "searcher/preview.hpp"
#include "searcher/searcher.hpp"

#include <doctest/doctest.h>

using namespace det;

namespace {

config::experiment_config script_config(const std::string& searcher_lines, const std::string& hparams = "x = 1\n") {
  return config::parse_experiment_config(
      "entrypoint = \"python3 train.py\"\n[reproducibility]\nexperiment_seed = 7\n[hyperparameters]\n" + hparams +
          "[searcher]\nmetric = \"loss\"\n" + searcher_lines,
      "script.toml");
}

searcher::searcher start(const config::experiment_config& config) {
  return searcher::searcher(searcher::make_search_method(config));
}

bool asks_for_a_length(const std::vector<searcher::action>& actions) {
  for (const auto& a : actions)
    if (std::holds_alternative<searcher::validate_after_action>(a)) return true;
  return false;
}

} // namespace

TEST_CASE("a single search without a length creates its trial and gives it no length") {
  auto s = start(script_config("name = \"single\"\n"));
  auto actions = s.initial_trials();
  REQUIRE(actions.size() == 1);
  CHECK(std::get<searcher::create_action>(actions[0]).request_id == 1);
  CHECK_FALSE(asks_for_a_length(s.trial_created(1)));
  CHECK(s.progress() == 0.0);
  s.trial_progress(1, 0.25);
  CHECK(s.progress() == doctest::Approx(0.25));
  s.trial_progress(1, 0.1);  // progress never goes back
  CHECK(s.progress() == doctest::Approx(0.25));
  CHECK(s.validation_completed(1, 0.5, 10).empty());  // steps without a length give no share
  CHECK(s.progress() == doctest::Approx(0.25));
  auto last = s.trial_exited(1);
  REQUIRE(last.size() == 1);
  CHECK(std::holds_alternative<searcher::shutdown_action>(last[0]));
  CHECK(s.progress() == 1.0);
}

TEST_CASE("a single search's reported progress survives a master restart") {
  auto config = script_config("name = \"single\"\n");
  auto s = start(config);
  s.initial_trials();
  s.trial_created(1);
  s.trial_progress(1, 0.6);
  auto restored = start(config);
  restored.restore(s.snapshot());
  CHECK(restored.progress() == doctest::Approx(0.6));
}

TEST_CASE("random and grid searches without a length count each trial's reported share") {
  auto random = start(script_config("name = \"random\"\nmax_trials = 2\n", "x = { type = \"int\", minval = 0, maxval = 9 }\n"));
  CHECK(random.initial_trials().size() == 2);
  CHECK_FALSE(asks_for_a_length(random.trial_created(1)));
  CHECK_FALSE(asks_for_a_length(random.trial_created(2)));
  random.trial_progress(1, 0.5);
  CHECK(random.progress() == doctest::Approx(0.25));
  random.trial_exited(2);
  CHECK(random.progress() == doctest::Approx(0.75));

  auto grid = start(script_config("name = \"grid\"\n", "x = { type = \"int\", minval = 0, maxval = 1, count = 2 }\n"));
  CHECK(grid.initial_trials().size() == 2);
  CHECK_FALSE(asks_for_a_length(grid.trial_created(1)));
  grid.trial_progress(1, 1.0);
  CHECK(grid.progress() == doctest::Approx(0.5));
}

TEST_CASE("a search with max_length keeps asking its trials to train it, and progress from steps too") {
  auto s = start(script_config("name = \"single\"\nmax_length = { batches = 100 }\n"));
  auto actions = s.initial_trials();
  REQUIRE(actions.size() == 2);
  CHECK(std::get<searcher::validate_after_action>(actions[1]).length.value == 100);
  s.validation_completed(1, 0.5, 40);
  CHECK(s.progress() == doctest::Approx(0.4));
  s.trial_progress(1, 0.5);
  CHECK(s.progress() == doctest::Approx(0.5));
}

TEST_CASE("a preview of a search without a length says each trial trains until its process exits") {
  auto buckets = searcher::preview(script_config("name = \"random\"\nmax_trials = 3\n"));
  REQUIRE(buckets.size() == 1);
  CHECK(buckets[0].count == 3);
  CHECK(buckets[0].length == 0);
}
