// random and single against Determined 0.38's random_test.go (determined-reference §2.8 item 13).
#include "config/experiment_config.hpp"
#include "searcher/searcher.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>

using namespace det;
using searcher::action;

namespace {

config::experiment_config random_config(const std::string& searcher_lines, uint32_t seed = 102932948) {
  return config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\n[reproducibility]\nexperiment_seed = " + std::to_string(seed) +
          "\n[hyperparameters]\nx = { type = \"int\", minval = 0, maxval = 10 }\n"
          "[searcher]\nmetric = \"loss\"\nmax_length = { batches = 100 }\n" + searcher_lines,
      "random.toml");
}

struct outcome {
  std::vector<searcher::create_action> creates;
  std::set<int64_t> stopped;
  std::vector<double> progress;
  bool shut_down = false;
};

/// Runs every trial to the length the search asks for, oldest first, reporting half way and at
/// the end; `early_exit` may pick trials that exit early instead, and why.
outcome run_all(searcher::searcher& s,
                std::function<std::optional<searcher::exit_reason>(int64_t)> early_exit = {}) {
  outcome result;
  std::map<int64_t, int64_t> target;
  std::function<void(const std::vector<action>&)> apply = [&](const std::vector<action>& actions) {
    for (const auto& a : actions) {
      if (const auto* create = std::get_if<searcher::create_action>(&a)) {
        result.creates.push_back(*create);
        apply(s.trial_created(create->request_id));
      } else if (const auto* validate = std::get_if<searcher::validate_after_action>(&a)) {
        target[validate->request_id] = validate->length.value;
      } else if (const auto* stop = std::get_if<searcher::stop_action>(&a)) {
        result.stopped.insert(stop->request_id);
      } else {
        result.shut_down = true;
      }
    }
    result.progress.push_back(s.progress());
  };
  apply(s.initial_trials());
  for (size_t i = 0; i < result.creates.size(); ++i) {
    auto id = result.creates[i].request_id;
    auto reason = early_exit ? early_exit(id) : std::nullopt;
    if (reason) {
      apply(s.trial_exited_early(id, *reason));
    } else {
      apply(s.validation_completed(id, 0.5, target.at(id) / 2));
      apply(s.validation_completed(id, 0.25, target.at(id)));
    }
    apply(s.trial_exited(id));
  }
  return result;
}

searcher::searcher start(const config::experiment_config& config) {
  return searcher::searcher(searcher::make_search_method(config));
}

} // namespace

TEST_CASE("random: 4 trials within the range, none stopped (random_test.go)") {
  auto s = start(random_config("name = \"random\"\nmax_trials = 4\nmax_concurrent_trials = 2\n"));
  auto result = run_all(s);
  REQUIRE(result.creates.size() == 4);
  for (size_t i = 0; i < result.creates.size(); ++i) {
    CHECK(result.creates[i].request_id == static_cast<int64_t>(i + 1));
    auto x = nlohmann::json::parse(result.creates[i].hparams_json)["x"].get<int>();
    CHECK(x >= 0);
    CHECK(x <= 10);
  }
  CHECK(result.stopped.empty());
  CHECK(result.shut_down);
  CHECK(result.progress.back() == 1.0);
}

TEST_CASE("single: exactly one trial, not stopped (random_test.go)") {
  auto s = start(random_config("name = \"single\"\n"));
  auto result = run_all(s);
  CHECK(result.creates.size() == 1);
  CHECK(result.stopped.empty());
  CHECK(result.shut_down);
}

TEST_CASE("random starts max_concurrent_trials at once, all of max_trials without a limit") {
  auto initial = [](const std::string& lines) {
    auto actions = start(random_config("name = \"random\"\n" + lines)).initial_trials();
    for (const auto& a : actions) CHECK(std::holds_alternative<searcher::create_action>(a));
    return actions.size();
  };
  CHECK(initial("max_trials = 4\nmax_concurrent_trials = 2\n") == 2);
  CHECK(initial("max_trials = 4\n") == 4);  // the default limit is 16
  CHECK(initial("max_trials = 40\nmax_concurrent_trials = 0\n") == 40);
}

TEST_CASE("random asks each trial to train the whole length, once it exists") {
  auto s = start(random_config("name = \"random\"\nmax_trials = 1\n"));
  s.initial_trials();
  auto actions = s.trial_created(1);
  REQUIRE(actions.size() == 1);
  CHECK(std::get<searcher::validate_after_action>(actions[0]).length ==
        config::length{config::length_unit::batches, 100});
}

TEST_CASE("random replaces a trial with invalid hyperparameters without counting it") {
  auto s = start(random_config("name = \"random\"\nmax_trials = 2\nmax_concurrent_trials = 1\n"));
  auto result = run_all(s, [](int64_t id) -> std::optional<searcher::exit_reason> {
    if (id == 1) return searcher::exit_reason::invalid_hp;
    if (id == 2) return searcher::exit_reason::errored;  // counts: a failed trial is a trial
    return std::nullopt;
  });
  CHECK(result.creates.size() == 3);
  CHECK(result.shut_down);
  CHECK(result.progress.back() == 1.0);
}

TEST_CASE("random progress: exited trials count whole, others their reported share, over max_trials") {
  auto s = start(random_config("name = \"random\"\nmax_trials = 4\nmax_concurrent_trials = 2\n"));
  s.initial_trials();
  s.trial_created(1);
  s.trial_created(2);
  CHECK(s.progress() == 0.0);
  s.validation_completed(1, 0.5, 50);
  CHECK(s.progress() == doctest::Approx(0.125));
  s.trial_exited(1);
  CHECK(s.progress() == doctest::Approx(0.25));
  s.trial_exited_early(2, searcher::exit_reason::invalid_hp);
  s.trial_exited(2);
  CHECK(s.progress() == doctest::Approx(0.25));  // an invalid trial is no part of the search
}

TEST_CASE("the experiment seed decides every random trial, in order") {
  auto creates = [](uint32_t seed) {
    auto s = start(random_config("name = \"random\"\nmax_trials = 6\nmax_concurrent_trials = 2\n", seed));
    return run_all(s).creates;
  };
  auto first = creates(3), again = creates(3), other = creates(4);
  REQUIRE(first.size() == 6);
  bool all_same = true, any_other = false;
  for (size_t i = 0; i < first.size(); ++i) {
    all_same = all_same && first[i].trial_seed == again[i].trial_seed && first[i].hparams_json == again[i].hparams_json;
    any_other = any_other || first[i].trial_seed != other[i].trial_seed;
  }
  CHECK(all_same);
  CHECK(any_other);
}

namespace {

/// Drives a search whose trials with `invalid(request_id)` exit with invalid hyperparameters and
/// whose others complete; returns how many trials it created and how it shut down.
std::pair<size_t, std::optional<searcher::shutdown_action>> run_invalid(
    searcher::searcher& s, std::function<bool(int64_t)> invalid) {
  std::vector<int64_t> open;
  std::optional<searcher::shutdown_action> shutdown;
  size_t created = 0;
  std::function<void(const std::vector<action>&)> apply = [&](const std::vector<action>& actions) {
    for (const auto& a : actions) {
      if (const auto* c = std::get_if<searcher::create_action>(&a)) {
        ++created;
        open.push_back(c->request_id);
        apply(s.trial_created(c->request_id));
      } else if (const auto* d = std::get_if<searcher::shutdown_action>(&a)) {
        shutdown = *d;
      }
    }
  };
  apply(s.initial_trials());
  while (!open.empty()) {
    auto id = open.front();
    open.erase(open.begin());
    if (invalid(id))
      apply(s.trial_exited_early(id, searcher::exit_reason::invalid_hp));
    else
      apply(s.validation_completed(id, 0.25, 100));
    apply(s.trial_exited(id));
  }
  return {created, shutdown};
}

} // namespace

TEST_CASE("random: a trial with invalid hyperparameters is replaced and not counted") {
  auto s = start(random_config("name = \"random\"\nmax_trials = 2\nmax_concurrent_trials = 2\n"));
  auto [created, shutdown] = run_invalid(s, [](int64_t id) { return id == 1; });
  CHECK(created == 3);
  REQUIRE(shutdown);
  CHECK_FALSE(shutdown->failure);
  CHECK_FALSE(shutdown->cancel);
}

TEST_CASE("a search whose every trial has invalid hyperparameters gives up and fails") {
  auto s = start(random_config("name = \"random\"\nmax_trials = 3\nmax_concurrent_trials = 2\n"));
  auto [created, shutdown] = run_invalid(s, [](int64_t) { return true; });
  CHECK(created >= searcher::max_invalid_trials);
  CHECK(created <= searcher::max_invalid_trials + 2);
  REQUIRE(shutdown);
  CHECK(shutdown->failure);
  CHECK_FALSE(shutdown->cancel);

  // single never replaces its trial; as in Determined, an invalid trial is not a failure.
  auto single = start(random_config("name = \"single\"\n"));
  auto [one, ended] = run_invalid(single, [](int64_t) { return true; });
  CHECK(one == 1);
  REQUIRE(ended);
  CHECK_FALSE(ended->failure);
}
