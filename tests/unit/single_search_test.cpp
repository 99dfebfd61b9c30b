#include "config/experiment_config.hpp"
#include "searcher/searcher.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace det;
using searcher::action;

namespace {

config::experiment_config single_config(const std::string& length_lines, const std::string& extra = "") {
  return config::parse_experiment_config("entrypoint = \"builtin:mlp\"\n" + extra +
                                             "\n[reproducibility]\nexperiment_seed = 42\n"
                                             "[hyperparameters]\nlr = 0.01\nwidth = { type = \"int\", minval = 1, maxval = 100 }\n"
                                             "[searcher]\nname = \"single\"\nmetric = \"loss\"\n" + length_lines,
                                         "single.toml");
}

searcher::searcher start(const config::experiment_config& config) {
  return searcher::searcher(searcher::make_search_method(config));
}

const auto batches_1500 = "max_length = { batches = 1500 }\n";

} // namespace

TEST_CASE("single creates one trial and asks it to train the whole length") {
  auto s = start(single_config(batches_1500));
  auto actions = s.initial_trials();
  REQUIRE(actions.size() == 2);
  const auto& create = std::get<searcher::create_action>(actions[0]);
  CHECK(create.request_id == 1);
  CHECK(create.trial_seed < (1u << 31));
  auto hparams = nlohmann::json::parse(create.hparams_json);
  CHECK(hparams["lr"] == 0.01);
  CHECK(hparams["width"].get<int>() >= 1);
  CHECK(hparams["width"].get<int>() <= 100);
  const auto& validate = std::get<searcher::validate_after_action>(actions[1]);
  CHECK(validate.request_id == 1);
  CHECK(validate.length == config::length{config::length_unit::batches, 1500});
  CHECK(s.trials_requested() == 1);
}

TEST_CASE("single never stops its trial, reports progress, and completes when the trial exits") {
  auto s = start(single_config(batches_1500));
  s.initial_trials();
  CHECK(s.trial_created(1).empty());
  CHECK(s.progress() == 0.0);
  CHECK(s.validation_completed(1, 0.9, 500).empty());
  CHECK(s.progress() == doctest::Approx(1.0 / 3));
  CHECK(s.validation_completed(1, 0.1, 1500).empty());
  CHECK(s.progress() == 1.0);
  CHECK_FALSE(s.shut_down());
  auto actions = s.trial_exited(1);
  REQUIRE(actions.size() == 1);
  auto shutdown = std::get<searcher::shutdown_action>(actions[0]);
  CHECK_FALSE(shutdown.cancel);
  CHECK_FALSE(shutdown.failure);
  CHECK(s.shut_down());
  CHECK(s.trials_closed() == 1);
}

TEST_CASE("the way the only trial ended decides whether the experiment was canceled or failed") {
  struct expectation {
    searcher::exit_reason reason;
    bool cancel;
    bool failure;
  };
  for (auto e : {expectation{searcher::exit_reason::errored, false, true},
                 expectation{searcher::exit_reason::user_canceled, true, false},
                 expectation{searcher::exit_reason::invalid_hp, false, false}}) {
    auto s = start(single_config(batches_1500));
    s.initial_trials();
    s.trial_created(1);
    CHECK(s.trial_exited_early(1, e.reason).empty());
    // A second report of the same early exit changes nothing.
    CHECK(s.trial_exited_early(1, searcher::exit_reason::errored).empty());
    auto actions = s.trial_exited(1);
    REQUIRE(actions.size() == 1);
    auto shutdown = std::get<searcher::shutdown_action>(actions[0]);
    CHECK(shutdown.cancel == e.cancel);
    CHECK(shutdown.failure == e.failure);
  }
}

TEST_CASE("events about unknown or closed trials are stale and ignored") {
  auto s = start(single_config(batches_1500));
  CHECK(s.trial_exited(1).empty());  // nothing requested yet
  s.initial_trials();
  CHECK(s.trial_exited(7).empty());
  CHECK(s.validation_completed(7, 0.5, 1500).empty());
  CHECK(s.progress() == 0.0);
  CHECK(s.trial_exited(1).size() == 1);
  CHECK(s.trial_exited(1).empty());
  CHECK(s.trial_exited_early(1, searcher::exit_reason::errored).empty());
}

TEST_CASE("with time_metric and max_time, single trains max_time in that unit") {
  auto batches = start(single_config("time_metric = \"batches\"\nmax_time = 937\n")).initial_trials();
  CHECK(std::get<searcher::validate_after_action>(batches.at(1)).length ==
        config::length{config::length_unit::batches, 937});
  auto epochs = start(single_config("time_metric = \"epochs\"\nmax_time = 2\n",
                                    "records_per_epoch = 600\n[hyperparameters.global_batch_size]\ntype = \"const\"\nval = 60"));
  auto actions = epochs.initial_trials();
  CHECK(std::get<searcher::validate_after_action>(actions.at(1)).length ==
        config::length{config::length_unit::epochs, 2});
}

TEST_CASE("the experiment seed decides the trial's seed and hyperparameters") {
  auto first = std::get<searcher::create_action>(start(single_config(batches_1500)).initial_trials().at(0));
  auto again = std::get<searcher::create_action>(start(single_config(batches_1500)).initial_trials().at(0));
  CHECK(first.trial_seed == again.trial_seed);
  CHECK(first.hparams_json == again.hparams_json);
  auto other_config = single_config(batches_1500);
  other_config.experiment_seed = 43;
  auto other = std::get<searcher::create_action>(start(other_config).initial_trials().at(0));
  CHECK(other.trial_seed != first.trial_seed);
}

TEST_CASE("a searcher name the config reader would refuse is refused by the factory too") {
  auto config = single_config(batches_1500);
  config.searcher.name = "hyperband";
  std::string message;
  try {
    searcher::make_search_method(config);
  } catch (const config::config_error& e) {
    message = e.what();
  }
  CHECK(message == "searcher.name: hyperband is not a searcher det knows");
}
