// The tpe searcher: its Parzen densities, its place beside random search, and a benchmark it
// must win against random search.
#include "config/experiment_config.hpp"
#include "messages/searcher.pb.h"
#include "searcher/parzen_estimator.hpp"
#include "searcher/preview.hpp"
#include "searcher/searcher.hpp"
#include "searcher/tpe_search.hpp"

#include "bench/tpe_benchmark.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

using namespace det;
using nlohmann::json;
using searcher::action;

namespace {

using bench::tpe_benchmark;
using bench::tpe_benchmark_hparams;

constexpr double pi = 3.14159265358979323846;

config::experiment_config search_config(const std::string& searcher_lines, uint32_t seed = 102932948) {
  return config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\n[reproducibility]\nexperiment_seed = " + std::to_string(seed) +
          "\n[searcher]\nmetric = \"loss\"\nmax_length = { batches = 100 }\n" + searcher_lines + tpe_benchmark_hparams,
      "tpe.toml");
}

std::string searcher_lines(const std::string& name, int64_t max_trials, int64_t max_concurrent_trials) {
  return "name = \"" + name + "\"\nmax_trials = " + std::to_string(max_trials) +
         "\nmax_concurrent_trials = " + std::to_string(max_concurrent_trials) + "\n";
}

searcher::searcher start(const config::experiment_config& config) {
  return searcher::searcher(searcher::make_search_method(config));
}

/// How a trial ends: whether it reports its validation, and whether it exits early.
struct trial_fate {
  bool validates = true;
  std::optional<searcher::exit_reason> early_exit;
};

struct search_run {
  std::vector<searcher::create_action> creates;
  std::map<int64_t, int64_t> targets;
  std::set<int64_t> stopped;
  std::vector<double> metrics;
  std::vector<double> progress;
  bool shut_down = false;

  double best() const { return *std::min_element(metrics.begin(), metrics.end()); }
};

/// Runs every trial in creation order: it reports `metric` of its hyperparameters at the length
/// the search asks for, then exits; `fate` may make it skip the report or exit early. Before the
/// i-th trial reports, `handover(i, s)` may point `s` at another searcher to go on with.
search_run run(searcher::searcher& first, const std::function<double(const json&)>& metric = tpe_benchmark,
               const std::function<trial_fate(int64_t)>& fate = {},
               const std::function<void(size_t, searcher::searcher*&)>& handover = {}) {
  search_run result;
  searcher::searcher* s = &first;
  std::function<void(const std::vector<action>&)> apply = [&](const std::vector<action>& actions) {
    for (const auto& a : actions) {
      if (const auto* create = std::get_if<searcher::create_action>(&a)) {
        result.creates.push_back(*create);
        apply(s->trial_created(create->request_id));
      } else if (const auto* validate = std::get_if<searcher::validate_after_action>(&a)) {
        result.targets[validate->request_id] = validate->length.value;
      } else if (const auto* stop = std::get_if<searcher::stop_action>(&a)) {
        result.stopped.insert(stop->request_id);
      } else {
        result.shut_down = true;
      }
    }
    result.progress.push_back(s->progress());
  };
  apply(s->initial_trials());
  for (size_t i = 0; i < result.creates.size(); ++i) {
    if (handover) handover(i, s);
    auto id = result.creates[i].request_id;
    auto how = fate ? fate(id) : trial_fate{};
    if (how.validates) {
      double value = metric(json::parse(result.creates[i].hparams_json));
      result.metrics.push_back(value);
      apply(s->validation_completed(id, value, result.targets.at(id)));
    }
    if (how.early_exit) apply(s->trial_exited_early(id, *how.early_exit));
    apply(s->trial_exited(id));
  }
  return result;
}

/// The snapshot as the persistence actor stores and a restarted master reads it.
pb::SearcherSnapshot through_bytes(const searcher::searcher& s) {
  std::string bytes;
  REQUIRE(s.snapshot().SerializeToString(&bytes));
  pb::SearcherSnapshot parsed;
  REQUIRE(parsed.ParseFromString(bytes));
  return parsed;
}

bool same_create(const searcher::create_action& a, const searcher::create_action& b) {
  return a.request_id == b.request_id && a.trial_seed == b.trial_seed && a.hparams_json == b.hparams_json;
}

/// The integral of f over [lo, hi] by the trapezoid rule on n cells.
double integral(const std::function<double(double)>& f, double lo, double hi, int n) {
  double h = (hi - lo) / n, sum = 0.5 * (f(lo) + f(hi));
  for (int i = 1; i < n; ++i) sum += f(lo + i * h);
  return sum * h;
}

} // namespace

TEST_CASE("tpe weighs the newest 25 observations fully and ramps the older up from 1/n (Optuna's defaults)") {
  CHECK(searcher::tpe_observation_weights(0).empty());
  CHECK(searcher::tpe_observation_weights(25) == std::vector<double>(25, 1.0));
  auto w = searcher::tpe_observation_weights(30);
  REQUIRE(w.size() == 30);
  CHECK(w[0] == doctest::Approx(1.0 / 30));
  CHECK(w[2] == doctest::Approx(1.0 / 30 + 0.5 * (1 - 1.0 / 30)));
  CHECK(w[4] == doctest::Approx(1.0));
  CHECK(w[29] == 1.0);
  CHECK(searcher::tpe_observation_weights(26)[0] == doctest::Approx(1.0 / 26));

  CHECK(searcher::tpe_good_count(0, 0.1) == 0);
  CHECK(searcher::tpe_good_count(1, 0.1) == 1);
  CHECK(searcher::tpe_good_count(10, 0.1) == 1);
  CHECK(searcher::tpe_good_count(11, 0.1) == 2);
  CHECK(searcher::tpe_good_count(1000, 0.1) == 25);
  CHECK(searcher::tpe_good_count(10, 0.25) == 3);
}

TEST_CASE("tpe Parzen densities: kernel widths as Optuna sets them, and each a whole distribution") {
  // Observations 2 and 3 in [0, 10] with the prior at 5: the neighbour gaps give widths 1 and 2,
  // which the magic clip raises to 10 / min(100, 3 + 1) = 2.5; the prior is 10 wide. Each kernel
  // weighs 1/3 and is truncated to the range.
  searcher::numeric_parzen_estimator two({2, 3}, 0, 10, false);
  auto truncated = [](double x, double mu, double sigma) {
    auto cdf = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
    double z = (x - mu) / sigma;
    return std::exp(-0.5 * z * z) / (sigma * std::sqrt(2 * pi)) / (cdf((10 - mu) / sigma) - cdf(-mu / sigma));
  };
  for (double x : {0.0, 2.0, 4.5, 9.9}) {
    double expected = (truncated(x, 2, 2.5) + truncated(x, 3, 2.5) + truncated(x, 5, 10)) / 3;
    CHECK(two.log_likelihood(x) == doctest::Approx(std::log(expected)));
  }

  std::vector<double> seen = {0.5, 0.51, 0.52, 3, 7.5, 9.99, 0.1, 4, 4, 4};
  searcher::numeric_parzen_estimator continuous(seen, 0, 10, false);
  CHECK(integral([&](double x) { return std::exp(continuous.log_likelihood(x)); }, 0, 10, 20000) ==
        doctest::Approx(1.0).epsilon(1e-4));

  searcher::numeric_parzen_estimator integers({1, 1, 2, 7}, 1, 8, true);
  double total = 0;
  for (int v = 1; v <= 8; ++v) total += std::exp(integers.log_likelihood(v));
  CHECK(total == doctest::Approx(1.0));
  CHECK(integers.log_likelihood(1) > integers.log_likelihood(5));
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    double v = integers.sample(rng);
    CHECK(v == std::round(v));
    CHECK(v >= 1);
    CHECK(v <= 8);
  }

  // Observed 0, 0, 2 of 4 choices: each kernel is 1 on its choice plus 1/4 on every choice,
  // normalized, and the prior is uniform; all four kernels weigh 1/4.
  searcher::categorical_parzen_estimator categories({0, 0, 2}, 4);
  CHECK(std::exp(categories.log_likelihood(0)) == doctest::Approx((2 * 1.25 / 2 + 0.25 / 2 + 0.25) / 4));
  CHECK(std::exp(categories.log_likelihood(1)) == doctest::Approx((3 * 0.25 / 2 + 0.25) / 4));
  double sum = 0;
  for (size_t c = 0; c < 4; ++c) sum += std::exp(categories.log_likelihood(c));
  CHECK(sum == doctest::Approx(1.0));
}

TEST_CASE("tpe's first n_startup_trials trials are random's, and results rather than trials end them") {
  // Trial 1 validates and then reports invalid hyperparameters: replaced, and no part of the
  // model. Trial 2 fails before it validates: it counts as a trial but has no result. So the ten
  // results the random phase waits for come from trials 3 to 12, and trial 13 is the first the
  // model proposes.
  auto fate = [](int64_t id) {
    if (id == 1) return trial_fate{true, searcher::exit_reason::invalid_hp};
    if (id == 2) return trial_fate{false, searcher::exit_reason::errored};
    return trial_fate{};
  };
  auto tpe = start(search_config(searcher_lines("tpe", 13, 1)));
  auto random = start(search_config(searcher_lines("random", 13, 1)));
  auto tpe_run = run(tpe, tpe_benchmark, fate);
  auto random_run = run(random, tpe_benchmark, fate);
  REQUIRE(tpe_run.creates.size() == 14);
  REQUIRE(random_run.creates.size() == 14);
  for (size_t i = 0; i < 12; ++i) CHECK(same_create(tpe_run.creates[i], random_run.creates[i]));
  CHECK(tpe_run.creates[12].request_id == 13);
  CHECK(tpe_run.creates[12].hparams_json != random_run.creates[12].hparams_json);
  CHECK(tpe_run.shut_down);
  CHECK(tpe_run.progress.back() == 1.0);
}

TEST_CASE("tpe replays exactly for a seed, model proposals included") {
  auto creates = [](uint32_t seed) {
    auto s = start(search_config(searcher_lines("tpe", 30, 3), seed));
    return run(s).creates;
  };
  auto first = creates(7), again = creates(7), other = creates(8);
  REQUIRE(first.size() == 30);
  REQUIRE(again.size() == 30);
  CHECK(std::equal(first.begin(), first.end(), again.begin(), same_create));
  bool any_other = false;
  for (size_t i = 0; i < first.size(); ++i) any_other = any_other || first[i].hparams_json != other[i].hparams_json;
  CHECK(any_other);
}

TEST_CASE("tpe proposals keep every hyperparameter's type and range") {
  auto s = start(search_config(searcher_lines("tpe", 60, 4)));
  auto result = run(s);
  REQUIRE(result.creates.size() == 60);
  const std::set<std::string> activations = {"relu", "tanh", "sigmoid", "gelu"};
  for (const auto& create : result.creates) {
    CAPTURE(create.hparams_json);
    CHECK(create.trial_seed < (uint32_t{1} << 31));
    auto hp = json::parse(create.hparams_json);
    CHECK(hp.size() == 6);
    CHECK(hp.at("x").is_number_float());
    CHECK(hp.at("x").get<double>() >= -5.0);
    CHECK(hp.at("x").get<double>() <= 10.0);
    CHECK(hp.at("y").get<double>() >= 0.0);
    CHECK(hp.at("y").get<double>() <= 15.0);
    CHECK(hp.at("width").is_number_integer());
    CHECK(hp.at("width").get<int64_t>() >= 1);
    CHECK(hp.at("width").get<int64_t>() <= 128);
    CHECK(activations.count(hp.at("activation").get<std::string>()) == 1);
    CHECK(hp.at("batch_size") == 32);
    REQUIRE(hp.at("optimizer").is_object());
    CHECK(hp.at("optimizer").size() == 2);
    CHECK(hp.at("optimizer").at("kind") == "sgd");
    double lr = hp.at("optimizer").at("lr").get<double>();
    CHECK(lr >= 1e-5 * (1 - 1e-12));
    CHECK(lr <= 1.0 * (1 + 1e-12));
  }
}

TEST_CASE("tpe trains each trial the whole length, never stops one, and ends after max_trials") {
  auto s = start(search_config(searcher_lines("tpe", 15, 4)));
  CHECK(s.initial_trials().size() == 4);
  auto again = start(search_config(searcher_lines("tpe", 15, 4)));
  auto result = run(again);
  REQUIRE(result.creates.size() == 15);
  for (size_t i = 0; i < result.creates.size(); ++i) {
    CHECK(result.creates[i].request_id == static_cast<int64_t>(i + 1));
    CHECK(result.targets.at(result.creates[i].request_id) == 100);
  }
  CHECK(result.stopped.empty());
  CHECK(result.shut_down);
  CHECK(std::is_sorted(result.progress.begin(), result.progress.end()));
  CHECK(result.progress.back() == 1.0);
  CHECK(start(search_config(searcher_lines("tpe", 40, 0))).initial_trials().size() == 40);
}

TEST_CASE("a tpe search previews as a random one: max_trials trials trained the whole length") {
  auto buckets = searcher::preview(search_config(searcher_lines("tpe", 50, 4)));
  REQUIRE(buckets.size() == 1);
  CHECK(buckets[0].count == 50);
  CHECK(buckets[0].length == 100);
  CHECK(buckets[0].unit == config::length_unit::batches);
}

TEST_CASE("tpe minimizes the metric negated when larger is better") {
  auto lower = start(search_config(searcher_lines("tpe", 25, 1)));
  auto higher = start(search_config(searcher_lines("tpe", 25, 1) + "smaller_is_better = false\n"));
  auto by_loss = run(lower).creates;
  auto by_score = run(higher, [](const json& hp) { return -tpe_benchmark(hp); }).creates;
  REQUIRE(by_loss.size() == 25);
  CHECK(std::equal(by_loss.begin(), by_loss.end(), by_score.begin(), by_score.end(), same_create));
}

TEST_CASE("a restored tpe search goes on as the uninterrupted one") {
  auto config = search_config(searcher_lines("tpe", 24, 3));
  auto fate = [](int64_t id) {
    if (id == 4) return trial_fate{true, searcher::exit_reason::invalid_hp};
    if (id == 6) return trial_fate{false, searcher::exit_reason::errored};
    return trial_fate{};
  };
  auto whole = start(config);
  auto expected = run(whole, tpe_benchmark, fate);
  REQUIRE(expected.creates.size() == 25);
  // Before the first report, amid the random trials, at the switch to the model, and in it.
  for (size_t at : {size_t{0}, size_t{5}, size_t{12}, size_t{20}}) {
    CAPTURE(at);
    auto original = start(config);
    auto restored = start(config);
    auto resumed = run(original, tpe_benchmark, fate, [&](size_t i, searcher::searcher*& s) {
      if (i != at) return;
      restored.restore(through_bytes(*s));
      s = &restored;
    });
    REQUIRE(resumed.creates.size() == expected.creates.size());
    CHECK(std::equal(resumed.creates.begin(), resumed.creates.end(), expected.creates.begin(), same_create));
    CHECK(resumed.progress == expected.progress);
    CHECK(resumed.shut_down);
  }
}

TEST_CASE("a tpe search refuses another search's snapshot, or one outside its ranges") {
  auto config = search_config(searcher_lines("tpe", 24, 3));
  auto random = start(search_config(searcher_lines("random", 24, 3)));
  random.initial_trials();
  auto s = start(config);
  CHECK_THROWS_WITH_AS(s.restore(through_bytes(random)), "cannot restore the tpe search from a snapshot of a random search",
                       std::runtime_error);

  auto tpe = start(config);
  tpe.initial_trials();
  auto snapshot = through_bytes(tpe);
  auto& point = (*snapshot.mutable_tpe()->mutable_points())[1];
  REQUIRE(point.coordinates_size() == 5);
  point.set_coordinates(0, 4);  // activation: only 4 choices
  auto fresh = start(config);
  CHECK_THROWS_WITH_AS(fresh.restore(snapshot), "the tpe snapshot holds hyperparameters outside the experiment's ranges",
                       std::runtime_error);
}

TEST_CASE("tpe refuses settings Optuna would refuse") {
  auto config = search_config(searcher_lines("tpe", 5, 1));
  auto settings = searcher::tpe_settings_for(config.searcher, *config.searcher.training_length());
  settings.gamma = 0;
  CHECK_THROWS_AS(searcher::tpe_search(settings, config.hparams, 1), config::config_error);
  settings.gamma = 0.1;
  settings.n_ei_candidates = 0;
  CHECK_THROWS_AS(searcher::tpe_search(settings, config.hparams, 1), config::config_error);
}

TEST_CASE("tpe beats random on a 5-d benchmark: mean best of 50 trials over 10 seeds") {
  // One trial at a time, so that every proposal sees every earlier result.
  double tpe_sum = 0, random_sum = 0;
  const int seeds = 10;
  for (uint32_t seed = 1; seed <= seeds; ++seed) {
    auto tpe = start(search_config(searcher_lines("tpe", 50, 1), seed));
    auto random = start(search_config(searcher_lines("random", 50, 1), seed));
    auto tpe_run = run(tpe);
    auto random_run = run(random);
    REQUIRE(tpe_run.metrics.size() == 50);
    REQUIRE(random_run.metrics.size() == 50);
    tpe_sum += tpe_run.best();
    random_sum += random_run.best();
  }
  double tpe_mean = tpe_sum / seeds, random_mean = random_sum / seeds;
  MESSAGE("mean best after 50 trials (minimum 0.397887): tpe " << tpe_mean << ", random " << random_mean);
  CHECK(tpe_mean < random_mean);
}
