// async_halving and adaptive_asha against Determined 0.38's test vectors (determined-reference
// §2.8 items 1-7 and 9), driven through `searcher` as the experiment drives them.
#include "config/experiment_config.hpp"
#include "searcher/adaptive_asha_search.hpp"
#include "searcher/asha_rungs.hpp"
#include "searcher/asha_stopping_search.hpp"
#include "searcher/searcher.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>

using namespace det;
using searcher::action;

namespace {

config::experiment_config asha_config(const std::string& searcher_lines, uint32_t seed = 102932948) {
  return config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\n[reproducibility]\nexperiment_seed = " + std::to_string(seed) +
          "\n[hyperparameters]\nlr = { type = \"log\", minval = -4, maxval = -1 }\n"
          "width = { type = \"int\", minval = 1, maxval = 64 }\n"
          "[searcher]\nmetric = \"loss\"\n" + searcher_lines,
      "asha.toml");
}

std::vector<int64_t> units_of(const std::vector<searcher::rung>& rungs) {
  std::vector<int64_t> units;
  for (const auto& r : rungs) units.push_back(r.units_needed);
  return units;
}

std::vector<int64_t> ids_in(const searcher::rung& r) {
  std::vector<int64_t> ids;
  r.for_each([&ids](int64_t id, double) { ids.push_back(id); });
  return ids;
}

std::vector<double> metrics_in(const searcher::rung& r) {
  std::vector<double> metrics;
  r.for_each([&metrics](int64_t, double metric) { metrics.push_back(metric); });
  return metrics;
}

struct trial_run {
  searcher::create_action create;
  int64_t target = 0;   // the length of its validate_after_action
  int64_t trained = 0;  // the length of its last report
  bool stopped = false;
};

struct search_run {
  std::vector<trial_run> trials;  // in creation order
  bool shut_down = false;
  std::vector<double> progress;   // after every event
};

/// Determined's util_test.go run(maxUnits, valPeriod, increasing): trials in creation order, each
/// reporting a validation every val_period units up to max_units (or until the search stops it)
/// with a metric that moves by one per report across the whole search, then exiting.
search_run run(searcher::searcher& s, int64_t max_units, int64_t val_period, bool increasing) {
  search_run result;
  std::map<int64_t, size_t> index_of;
  std::function<void(const std::vector<action>&)> apply = [&](const std::vector<action>& actions) {
    for (const auto& a : actions) {
      if (const auto* create = std::get_if<searcher::create_action>(&a)) {
        index_of[create->request_id] = result.trials.size();
        result.trials.push_back(trial_run{*create});
        apply(s.trial_created(create->request_id));
      } else if (const auto* validate = std::get_if<searcher::validate_after_action>(&a)) {
        result.trials.at(index_of.at(validate->request_id)).target = validate->length.value;
      } else if (const auto* stop = std::get_if<searcher::stop_action>(&a)) {
        result.trials.at(index_of.at(stop->request_id)).stopped = true;
      } else {
        result.shut_down = true;
      }
    }
    result.progress.push_back(s.progress());
  };
  apply(s.initial_trials());
  double metric = 0;
  for (size_t i = 0; i < result.trials.size(); ++i) {
    auto id = result.trials[i].create.request_id;
    auto last = std::min(max_units, result.trials[i].target);
    for (int64_t t = val_period; t <= last && !result.trials[i].stopped; t += val_period) {
      metric += increasing ? 1 : -1;
      result.trials[i].trained = t;
      apply(s.validation_completed(id, metric, t));
    }
    apply(s.trial_exited(id));
  }
  return result;
}

/// Trials that trained exactly `length`, among those the predicate selects.
int64_t trained(const search_run& r, int64_t length, const std::function<bool(const trial_run&)>& pick = {}) {
  return std::count_if(r.trials.begin(), r.trials.end(),
                       [&](const trial_run& t) { return t.trained == length && (!pick || pick(t)); });
}

void check_finished(const search_run& r, int64_t max_length) {
  CHECK(r.shut_down);
  for (const auto& t : r.trials) {
    CHECK(t.target == max_length);
    CHECK(t.stopped);
  }
  CHECK(std::is_sorted(r.progress.begin(), r.progress.end()));
  CHECK(r.progress.back() == doctest::Approx(1.0));
}

std::vector<searcher::create_action> creates_of(const search_run& r) {
  std::vector<searcher::create_action> creates;
  for (const auto& t : r.trials) creates.push_back(t.create);
  return creates;
}

bool same_creates(const std::vector<searcher::create_action>& a, const std::vector<searcher::create_action>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.request_id == y.request_id && x.trial_seed == y.trial_seed && x.hparams_json == y.hparams_json;
  });
}

/// A search built from `config`, and a view of its method before the searcher takes it over.
template <typename method>
std::pair<searcher::searcher, const method*> start(const config::experiment_config& config) {
  auto made = searcher::make_search_method(config);
  const auto* view = dynamic_cast<const method*>(made.get());
  REQUIRE(view != nullptr);
  return {searcher::searcher(std::move(made)), view};
}

const std::string halving_10_trials =
    "name = \"async_halving\"\nmax_trials = 10\nmax_concurrent_trials = 3\ndivisor = 3\nnum_rungs = 3\n"
    "time_metric = \"batches\"\nmax_time = 900\n";

const std::string adaptive_9_trials =
    "name = \"adaptive_asha\"\nmax_trials = 9\nmax_rungs = 5\ndivisor = 3\nmax_concurrent_trials = 3\n"
    "mode = \"standard\"\ntime_metric = \"batches\"\nmax_time = 90\n";

} // namespace

TEST_CASE("rung i of n needs max_length over divisor^(n-i-1), rounded down (TestMakeRungs)") {
  CHECK(units_of(searcher::make_rungs(3, 3, 9)) == std::vector<int64_t>{1, 3, 9});
  CHECK(units_of(searcher::make_rungs(4, 2, 10)) == std::vector<int64_t>{1, 2, 5, 10});
  CHECK(units_of(searcher::make_rungs(1, 3, 9)) == std::vector<int64_t>{9});
  CHECK(units_of(searcher::make_rungs(3, 3, 900)) == std::vector<int64_t>{100, 300, 900});
  // A rung never needs less than one unit.
  CHECK(units_of(searcher::make_rungs(3, 4, 5)) == std::vector<int64_t>{1, 1, 5});
}

TEST_CASE("a metric goes before every equal one already in the rung (TestInsertCompletedMetric)") {
  auto rung_of = [](std::vector<double> metrics) {
    searcher::rung r;
    std::vector<std::pair<int64_t, double>> entries;
    int64_t id = 100;
    for (auto m : metrics) entries.emplace_back(id++, m);
    r.assign(entries);
    return r;
  };
  auto a = rung_of({0.0, 1.5, 2.1});
  CHECK(a.insert(1, 1.2) == 1);
  auto b = rung_of({0.0, 1.5, 2.0});
  CHECK(b.insert(1, 3.0) == 3);
  auto c = rung_of({-3, -2, -1});
  CHECK(c.insert(1, -3.4) == 0);
  searcher::rung empty;
  CHECK(empty.insert(1, 1.2) == 0);
  auto tie = rung_of({0.0, 1.5, 2.1});
  CHECK(tie.insert(7, 1.5) == 1);
  CHECK(ids_in(tie) == std::vector<int64_t>{100, 7, 101, 102});
  tie.remove(101);
  CHECK(ids_in(tie) == std::vector<int64_t>{100, 7, 102});
}

TEST_CASE("a rung of many blocks ranks, removes and restores as one sorted list would") {
  // Few distinct metrics, so that ties fall across block boundaries; enough entries for dozens
  // of blocks. The reference: (metric, id) pairs, each new one before its equals.
  std::mt19937_64 rng(7);
  searcher::rung r;
  std::vector<std::pair<double, int64_t>> reference;
  for (int64_t id = 1; id <= 20 * static_cast<int64_t>(searcher::rung::block_capacity); ++id) {
    auto metric = static_cast<double>(rng() % 50);
    auto at = std::lower_bound(reference.begin(), reference.end(), metric,
                               [](const auto& entry, double m) { return entry.first < m; });
    auto expected = static_cast<size_t>(at - reference.begin());
    reference.insert(at, {metric, id});
    REQUIRE(r.insert(id, metric) == expected);
    if (id % 97 == 0) {  // take out an earlier entry now and then
      auto gone = reference.begin() + static_cast<std::ptrdiff_t>(rng() % reference.size());
      r.remove(gone->second);
      reference.erase(gone);
    }
  }
  std::vector<int64_t> ids;
  std::vector<std::pair<int64_t, double>> entries;
  for (const auto& [metric, id] : reference) {
    ids.push_back(id);
    entries.emplace_back(id, metric);
  }
  CHECK(r.size() == reference.size());
  CHECK(ids_in(r) == ids);
  searcher::rung restored;
  restored.assign(entries);
  CHECK(ids_in(restored) == ids);
  // After a restore, a new entry still goes before its equals.
  auto rank = std::lower_bound(reference.begin(), reference.end(), 25.0,
                               [](const auto& entry, double m) { return entry.first < m; }) -
              reference.begin();
  CHECK(restored.insert(0, 25.0) == static_cast<size_t>(rank));
}

TEST_CASE("a rung restored from entries out of rank order puts them in it, NaN last, equal metrics in the order given") {
  searcher::rung r;
  r.assign({{1, 2.0}, {2, std::nan("")}, {3, 1.0}, {4, 2.0}});
  CHECK(ids_in(r) == std::vector<int64_t>{3, 1, 4, 2});
  CHECK(r.insert(5, 2.0) == 1);
  CHECK(r.insert(6, 9.0) == 4);
}

TEST_CASE("the ranked metric is negated when larger is better (TestGetMetric)") {
  // The experiment reads the searcher metric and the length trained out of the validation report
  // (a missing metric is its error to report); the search only orients the metric.
  CHECK(searcher::ranked_metric(0.25, true) == 0.25);
  CHECK(searcher::ranked_metric(0.2, false) == -0.2);
  CHECK(searcher::ranked_metric(1.2, true) == 1.2);
  CHECK(searcher::ranked_metric(std::nan(""), false) == searcher::exited_trial_metric);
}

TEST_CASE("a report ranks a trial in each rung it reached, and outside the top 1/divisor stops it (TestStopTrials)") {
  const std::string rungs_1_3_9 =
      "name = \"async_halving\"\nmax_trials = 2\nnum_rungs = 3\ndivisor = 3\n"
      "time_metric = \"batches\"\nmax_time = 9\n";
  {
    auto [s, method] = start<searcher::asha_stopping_search>(asha_config(rungs_1_3_9));
    REQUIRE(s.initial_trials().size() == 2);
    CHECK(units_of(method->rungs()) == std::vector<int64_t>{1, 3, 9});
    s.trial_created(1);
    s.trial_created(2);
    CHECK(s.validation_completed(1, 0.5, 1).empty());
    CHECK(method->rung_of(1) == 1);
    CHECK(s.validation_completed(2, 0.4, 1).empty());
    CHECK(ids_in(method->rungs()[0]) == std::vector<int64_t>{2, 1});
    CHECK(method->rung_of(2) == 1);
  }
  {
    auto [s, method] = start<searcher::asha_stopping_search>(asha_config(rungs_1_3_9));
    s.initial_trials();
    s.trial_created(1);
    s.trial_created(2);
    CHECK(s.validation_completed(1, 0.5, 1).empty());
    auto actions = s.validation_completed(2, 0.6, 1);
    REQUIRE(actions.size() == 1);  // no replacement: both of the 2 trials exist
    CHECK(std::get<searcher::stop_action>(actions[0]).request_id == 2);
    CHECK(method->rung_of(2) == 0);
    // Reports after the stop change nothing.
    CHECK(s.validation_completed(2, 0.1, 9).empty());
    CHECK(method->rungs()[2].size() == 0);
  }
}

TEST_CASE("one report can pass several rungs, and the top rung stops the trial") {
  auto [s, method] = start<searcher::asha_stopping_search>(asha_config(
      "name = \"async_halving\"\nmax_trials = 5\nmax_concurrent_trials = 1\nnum_rungs = 3\ndivisor = 3\n"
      "time_metric = \"batches\"\nmax_time = 9\n"));
  REQUIRE(s.initial_trials().size() == 1);
  auto created = s.trial_created(1);
  REQUIRE(created.size() == 1);
  CHECK(std::get<searcher::validate_after_action>(created[0]).length ==
        config::length{config::length_unit::batches, 9});
  CHECK(s.validation_completed(1, 0.5, 4).empty());
  CHECK(method->rung_of(1) == 2);
  auto actions = s.validation_completed(1, 0.4, 9);
  REQUIRE(actions.size() == 2);
  CHECK(std::get<searcher::stop_action>(actions[0]).request_id == 1);
  CHECK(std::get<searcher::create_action>(actions[1]).request_id == 2);
  for (const auto& r : method->rungs()) CHECK(ids_in(r) == std::vector<int64_t>{1});
}

TEST_CASE("async_halving: 10 trials, 1 trains to 900 and 9 stop at 100 (TestASHAStoppingSearchMethod)") {
  auto [s, method] = start<searcher::asha_stopping_search>(asha_config(halving_10_trials));
  auto result = run(s, 900, 100, true);
  CHECK(units_of(method->rungs()) == std::vector<int64_t>{100, 300, 900});
  CHECK(result.trials.size() == 10);
  CHECK(trained(result, 900) == 1);
  CHECK(trained(result, 100) == 9);
  check_finished(result, 900);
}

TEST_CASE("async_halving with larger metrics better keeps every trial that is the best so far") {
  auto [s, method] = start<searcher::asha_stopping_search>(
      asha_config(halving_10_trials + "smaller_is_better = false\n"));
  auto result = run(s, 900, 100, true);
  CHECK(result.trials.size() == 10);
  CHECK(trained(result, 900) == 10);
  check_finished(result, 900);
}

TEST_CASE("async_halving starts max_concurrent_trials, or divisor^(num_rungs-1) without a limit") {
  auto initial = [](const std::string& lines) {
    return searcher::searcher(searcher::make_search_method(asha_config(lines))).initial_trials().size();
  };
  const std::string base = "name = \"async_halving\"\nnum_rungs = 3\ndivisor = 3\nmax_length = { batches = 9 }\n";
  CHECK(initial(base + "max_trials = 20\nmax_concurrent_trials = 4\n") == 4);
  CHECK(initial(base + "max_trials = 2\nmax_concurrent_trials = 4\n") == 2);
  CHECK(initial(base + "max_trials = 20\nmax_concurrent_trials = 0\n") == 9);
  CHECK(initial(base + "max_trials = 5\nmax_concurrent_trials = 0\n") == 5);
}

TEST_CASE("async_halving replaces trials with invalid hyperparameters and ranks other early exits last") {
  auto [s, method] = start<searcher::asha_stopping_search>(asha_config(
      "name = \"async_halving\"\nmax_trials = 3\nmax_concurrent_trials = 2\nnum_rungs = 2\ndivisor = 2\n"
      "time_metric = \"batches\"\nmax_time = 4\n"));
  REQUIRE(s.initial_trials().size() == 2);
  s.trial_created(1);
  s.trial_created(2);
  CHECK(s.validation_completed(1, 0.5, 2).empty());
  CHECK(s.validation_completed(2, 0.3, 2).empty());
  CHECK(ids_in(method->rungs()[0]) == std::vector<int64_t>{2, 1});

  // Invalid hyperparameters: its metrics leave every rung and a replacement does not count.
  auto invalid = s.trial_exited_early(2, searcher::exit_reason::invalid_hp);
  REQUIRE(invalid.size() == 2);
  CHECK(std::get<searcher::stop_action>(invalid[0]).request_id == 2);
  CHECK(std::get<searcher::create_action>(invalid[1]).request_id == 3);
  CHECK(s.trial_exited(2).empty());
  CHECK(ids_in(method->rungs()[0]) == std::vector<int64_t>{1});

  s.trial_created(3);
  auto stopped = s.validation_completed(3, 0.7, 2);
  REQUIRE(stopped.size() == 2);  // 3 requested, 1 invalid: room for one more
  CHECK(std::get<searcher::stop_action>(stopped[0]).request_id == 3);
  CHECK(std::get<searcher::create_action>(stopped[1]).request_id == 4);

  // Any other early exit ranks the trial last in its rung; the budget is spent, so no replacement.
  s.trial_created(4);
  CHECK(s.trial_exited_early(4, searcher::exit_reason::errored).empty());
  CHECK(ids_in(method->rungs()[0]) == std::vector<int64_t>{1, 3, 4});
  CHECK(metrics_in(method->rungs()[0]).back() == searcher::exited_trial_metric);
  CHECK(s.trial_exited(4).empty());
  CHECK(s.trial_exited(3).empty());
  CHECK_FALSE(s.shut_down());
  CHECK(s.validation_completed(1, 0.5, 4).size() == 1);  // top rung: stopped, nothing left to start
  auto last = s.trial_exited(1);
  REQUIRE(last.size() == 1);
  CHECK_FALSE(std::get<searcher::shutdown_action>(last[0]).failure);
}

TEST_CASE("async_halving progress: rung 0 over 1.2 max_trials, then the share of valid trials done") {
  auto [s, method] = start<searcher::asha_stopping_search>(asha_config(
      "name = \"async_halving\"\nmax_trials = 2\nnum_rungs = 2\ndivisor = 2\nmax_length = { batches = 4 }\n"));
  s.initial_trials();
  s.trial_created(1);
  s.trial_created(2);
  CHECK(s.progress() == 0.0);
  s.validation_completed(1, 0.5, 2);
  CHECK(s.progress() == doctest::Approx(1 / 2.4));
  s.validation_completed(2, 0.6, 2);  // stopped
  CHECK(s.progress() == doctest::Approx(2 / 2.4));
  s.trial_exited(2);
  CHECK(s.progress() == doctest::Approx(2 / 2.4));
  s.validation_completed(1, 0.5, 4);
  s.trial_exited(1);
  CHECK(s.progress() == 1.0);
  CHECK(s.shut_down());
}

TEST_CASE("trials per bracket follow their budget weights (TestBracketMaxTrials)") {
  CHECK(searcher::bracket_max_trials(20, 3, {3, 2, 1}) == std::vector<int64_t>{12, 5, 3});
  CHECK(searcher::bracket_max_trials(50, 3, {4, 3}) == std::vector<int64_t>{35, 15});
  CHECK(searcher::bracket_max_trials(50, 4, {3, 2}) == std::vector<int64_t>{37, 13});
}

TEST_CASE("concurrency is split across brackets (TestBracketMaxConcurrentTrials)") {
  CHECK(searcher::bracket_max_concurrent_trials(0, 3, {9, 3, 1}) == std::vector<int64_t>{3, 3, 3});
  CHECK(searcher::bracket_max_concurrent_trials(11, 3, {9, 3, 1}) == std::vector<int64_t>{4, 4, 3});
  CHECK(searcher::bracket_max_concurrent_trials(0, 4, {40, 10}) == std::vector<int64_t>{10, 10});
  // Every bracket runs at least one trial at a time.
  CHECK(searcher::bracket_max_concurrent_trials(1, 3, {9, 3, 1}) == std::vector<int64_t>{1, 1, 1});
}

TEST_CASE("the mode picks the brackets from maxRungs, unless bracket_rungs names them") {
  auto rungs = [](const std::string& extra) {
    auto config = asha_config(adaptive_9_trials + extra);
    return searcher::adaptive_bracket_rungs(config.searcher, 90);
  };
  // maxRungs = min(5, int(log 90 / log 3) + 1 = 5, int(log 9 / log 3) + 1 = 3) = 3
  CHECK(rungs("") == std::vector<int64_t>{3, 2});
  auto aggressive = asha_config(adaptive_9_trials);
  aggressive.searcher.mode = "aggressive";
  CHECK(searcher::adaptive_bracket_rungs(aggressive.searcher, 90) == std::vector<int64_t>{3});
  auto conservative = asha_config(adaptive_9_trials);
  conservative.searcher.mode = "conservative";
  CHECK(searcher::adaptive_bracket_rungs(conservative.searcher, 90) == std::vector<int64_t>{3, 2, 1});
  CHECK(rungs("bracket_rungs = [1, 4]\n") == std::vector<int64_t>{4, 1});
  auto few_rungs = asha_config(adaptive_9_trials);
  few_rungs.searcher.max_rungs = 2;
  CHECK(searcher::adaptive_bracket_rungs(few_rungs.searcher, 90) == std::vector<int64_t>{2, 1});
  // A short training length limits the rungs too: int(log 8 / log 3) + 1 = 2.
  CHECK(searcher::adaptive_bracket_rungs(asha_config(adaptive_9_trials).searcher, 8) == std::vector<int64_t>{2, 1});
}

TEST_CASE("adaptive_asha: two brackets, 6 and 3 trials, each with one trial at 90 (TestAdaptiveASHASearchMethod)") {
  auto [s, method] = start<searcher::adaptive_asha_search>(asha_config(adaptive_9_trials));
  auto result = run(s, 90, 10, true);
  const auto* tournament = method;
  REQUIRE(tournament->bracket_count() == 2);
  CHECK(units_of(tournament->bracket(0).rungs()) == std::vector<int64_t>{10, 30, 90});
  CHECK(units_of(tournament->bracket(1).rungs()) == std::vector<int64_t>{30, 90});
  CHECK(result.trials.size() == 9);
  auto in = [tournament](size_t bracket) {
    return [tournament, bracket](const trial_run& t) { return tournament->bracket_of(t.create.request_id) == bracket; };
  };
  CHECK(std::count_if(result.trials.begin(), result.trials.end(), in(0)) == 6);
  CHECK(trained(result, 10, in(0)) == 5);
  CHECK(trained(result, 90, in(0)) == 1);
  CHECK(std::count_if(result.trials.begin(), result.trials.end(), in(1)) == 3);
  CHECK(trained(result, 30, in(1)) == 2);
  CHECK(trained(result, 90, in(1)) == 1);
  check_finished(result, 90);
  CHECK_FALSE(tournament->bracket_of(100).has_value());
}

TEST_CASE("adaptive_asha progress is the mean of its brackets'") {
  auto [s, method] = start<searcher::adaptive_asha_search>(asha_config(adaptive_9_trials));
  auto first = s.initial_trials();
  REQUIRE(first.size() == 3);  // concurrency 3 split 2 + 1
  for (const auto& a : first) s.trial_created(std::get<searcher::create_action>(a).request_id);
  s.validation_completed(3, 0.5, 30);  // bracket 1: rung 0 holds 1 of 3 trials
  CHECK(method->bracket_of(3) == 1u);
  CHECK(s.progress() == doctest::Approx((0.0 + 1 / 3.6) / 2));
  s.validation_completed(1, 0.5, 10);  // bracket 0: 1 of 6
  CHECK(s.progress() == doctest::Approx((1 / 7.2 + 1 / 3.6) / 2));
}

TEST_CASE("the experiment seed decides every trial of async_halving and adaptive_asha") {
  for (const auto& lines : {halving_10_trials, adaptive_9_trials}) {
    auto creates = [&](uint32_t seed) {
      searcher::searcher s(searcher::make_search_method(asha_config(lines, seed)));
      return creates_of(run(s, 900, 10, false));
    };
    auto first = creates(7), again = creates(7), other = creates(8);
    CHECK(first.size() >= 9);
    CHECK(same_creates(first, again));
    CHECK_FALSE(same_creates(first, other));
    CHECK(first.front().request_id == 1);
  }
}
