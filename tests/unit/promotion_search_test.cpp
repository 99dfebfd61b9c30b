// Promotion-based ASHA and PBT (determined-reference §2.8 items 15 and 17).
#include "config/experiment_config.hpp"
#include "searcher/asha_promotion_search.hpp"
#include "searcher/pbt_search.hpp"
#include "searcher/searcher.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace det;
using searcher::action;

namespace {

config::experiment_config search_config(const std::string& searcher_lines, uint32_t seed = 102932948) {
  return config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\nrecords_per_epoch = 48000\n[reproducibility]\nexperiment_seed = " +
          std::to_string(seed) +
          "\n[hyperparameters]\nglobal_batch_size = 64\nlr = { type = \"log\", minval = -4, maxval = -1 }\n"
          "width = { type = \"int\", minval = 1, maxval = 64 }\n"
          "act = { type = \"categorical\", vals = [\"relu\", \"tanh\"] }\n"
          "[searcher]\nmetric = \"loss\"\n" + searcher_lines,
      "promotion.toml");
}

struct simulated_trial {
  searcher::create_action create;
  std::vector<int64_t> plan;  // every length it reported at
  int64_t target = 0;
  bool closed = false;
  bool early = false;         // the search cut it short
};

struct simulated_search {
  std::vector<simulated_trial> trials;  // in creation order
  bool shut_down = false;
};

/// A trial's nth report (counted across the search) returns this metric; nullopt: it exits early.
using metric_rule = std::function<std::optional<double>(int64_t request_id, int64_t report)>;

/// Drives a search as det's experiment does for waiting trials: each trial reports once at every
/// length it is asked for, in the order asked, then waits; closed trials exit.
simulated_search simulate(const config::experiment_config& config, const metric_rule& metric,
                          searcher::exit_reason early_reason = searcher::exit_reason::errored) {
  searcher::searcher s(searcher::make_search_method(config));
  REQUIRE(s.trials_wait_at_length());
  simulated_search result;
  std::map<int64_t, size_t> index_of;
  std::deque<int64_t> to_create, to_report, to_exit;
  auto apply = [&](const std::vector<action>& actions) {
    for (const auto& a : actions) {
      if (const auto* create = std::get_if<searcher::create_action>(&a)) {
        index_of[create->request_id] = result.trials.size();
        result.trials.push_back(simulated_trial{*create});
        to_create.push_back(create->request_id);
      } else if (const auto* validate = std::get_if<searcher::validate_after_action>(&a)) {
        result.trials.at(index_of.at(validate->request_id)).target = validate->length.value;
        to_report.push_back(validate->request_id);
      } else if (const auto* stop = std::get_if<searcher::stop_action>(&a)) {
        auto& t = result.trials.at(index_of.at(stop->request_id));
        CHECK_FALSE(t.closed);
        t.closed = true;
        t.early = stop->early;
        to_exit.push_back(stop->request_id);
      } else {
        result.shut_down = true;
      }
    }
  };
  apply(s.initial_trials());
  int64_t reports = 0;
  for (int guard = 0; guard < 1000000; ++guard) {
    if (!to_create.empty()) {
      auto id = to_create.front();
      to_create.pop_front();
      apply(s.trial_created(id));
    } else if (!to_exit.empty()) {
      auto id = to_exit.front();
      to_exit.pop_front();
      apply(s.trial_exited(id));
    } else if (!to_report.empty()) {
      auto id = to_report.front();
      to_report.pop_front();
      auto& t = result.trials.at(index_of.at(id));
      if (t.closed) continue;
      auto value = metric(id, ++reports);
      if (!value) {
        t.closed = true;
        apply(s.trial_exited_early(id, early_reason));
        apply(s.trial_exited(id));
        continue;
      }
      t.plan.push_back(t.target);
      apply(s.validation_completed(id, *value, t.target));
    } else {
      break;
    }
  }
  return result;
}

/// The plans as "COUNTx[L1,L2,...]" sorted, for readable failures.
std::string plans(const simulated_search& r) {
  std::map<std::vector<int64_t>, int> counts;
  for (const auto& t : r.trials) ++counts[t.plan];
  std::string text;
  for (const auto& [plan, count] : counts) {
    text += (text.empty() ? "" : " ") + std::to_string(count) + "x[";
    for (size_t i = 0; i < plan.size(); ++i) text += (i ? "," : "") + std::to_string(plan[i]);
    text += "]";
  }
  return text;
}

std::optional<double> worse_each_time(int64_t, int64_t report) {
  return static_cast<double>(report);
}

std::optional<double> older_is_better(int64_t request_id, int64_t) {
  return static_cast<double>(request_id);
}

const std::string asha_12 = "name = \"asha\"\nmax_trials = 12\nnum_rungs = 3\ndivisor = 3\n";

std::string pbt_lines(int population, int rounds, int length, double truncate, double resample = 0.2) {
  return "name = \"pbt\"\npopulation_size = " + std::to_string(population) + "\nnum_rounds = " +
         std::to_string(rounds) + "\nlength_per_round = { batches = " + std::to_string(length) +
         " }\nreplace_function = { truncate_fraction = " + std::to_string(truncate) +
         " }\nexplore_function = { resample_probability = " + std::to_string(resample) +
         ", perturb_factor = 0.2 }\n";
}

} // namespace

TEST_CASE("asha, 12 trials, 3 rungs, divisor 3: 8 train to rung 0, 3 to rung 1, 1 to the top (asha_test.go)") {
  auto batches = simulate(search_config(asha_12 + "max_length = { batches = 9000 }\n"), worse_each_time);
  CHECK(batches.shut_down);
  CHECK(plans(batches) == "8x[1000] 3x[1000,3000] 1x[1000,3000,9000]");
  int64_t total = 0;
  for (const auto& t : batches.trials) total += t.plan.empty() ? 0 : t.plan.back();
  CHECK(total == 26000);
  for (const auto& t : batches.trials) {
    CHECK(t.closed);
    CHECK(t.early == (t.plan.back() != 9000));
  }
  auto records = simulate(search_config(asha_12 + "max_length = { records = 576000 }\n"), worse_each_time);
  CHECK(plans(records) == "8x[64000] 3x[64000,192000] 1x[64000,192000,576000]");
  auto epochs = simulate(search_config(asha_12 + "max_length = { epochs = 12 }\n"), worse_each_time);
  CHECK(plans(epochs) == "8x[1] 3x[1,4] 1x[1,4,12]");
}

TEST_CASE("asha promotes at once when the third result makes room, and never revokes it (async promotions)") {
  // Trial 1 is the best of the first three; the later trials are all better than it.
  auto metric = [](int64_t request_id, int64_t) -> std::optional<double> {
    if (request_id <= 3) return 0.1 * static_cast<double>(request_id);
    return 0.01 / static_cast<double>(request_id);
  };
  auto r = simulate(search_config(asha_12 + "max_concurrent_trials = 1\nmax_length = { batches = 9000 }\n"), metric);
  CHECK(r.shut_down);
  REQUIRE(r.trials.size() == 12);
  CHECK(r.trials[0].plan.size() >= 2);  // promoted to 3000 when trial 3 reported
  CHECK(r.trials[0].plan[1] == 3000);
  auto promoted = std::count_if(r.trials.begin(), r.trials.end(), [](const auto& t) { return t.plan.size() >= 2; });
  CHECK(promoted > 4);  // more than int(12 / 3): later, better results were promoted too
}

TEST_CASE("asha replaces trials with invalid hyperparameters and ranks other early exits last") {
  auto invalid_every_fifth = [](int64_t request_id, int64_t report) -> std::optional<double> {
    if (request_id % 5 == 0) return std::nullopt;
    return static_cast<double>(report);
  };
  auto invalid = simulate(search_config(asha_12 + "max_length = { batches = 900 }\n"), invalid_every_fifth,
                          searcher::exit_reason::invalid_hp);
  CHECK(invalid.shut_down);
  auto valid = std::count_if(invalid.trials.begin(), invalid.trials.end(), [](const auto& t) { return !t.plan.empty(); });
  CHECK(valid == 12);
  CHECK(plans(invalid).find("8x[100] 3x[100,300] 1x[100,300,900]") != std::string::npos);

  // Trial 1 would be promoted on the third result, but it failed: it ranks last, so trial 2 goes.
  auto first_fails = [](int64_t request_id, int64_t) -> std::optional<double> {
    if (request_id == 1) return std::nullopt;
    return static_cast<double>(request_id);
  };
  auto failed = simulate(search_config(asha_12 + "max_length = { batches = 900 }\n"), first_fails);
  CHECK(failed.shut_down);
  CHECK(failed.trials.size() == 12);
  CHECK(failed.trials[0].plan.empty());
  CHECK(failed.trials[1].plan.size() >= 2);
}

TEST_CASE("pbt: population 2, 2 rounds of 200, truncate 0.5 (pbt_test.go)") {
  auto r = simulate(search_config(pbt_lines(2, 2, 200, 0.5)), older_is_better);
  CHECK(r.shut_down);
  CHECK(plans(r) == "2x[200] 1x[200,400]");
  REQUIRE(r.trials.size() == 3);
  CHECK(r.trials[2].create.parent_request_id == r.trials[0].create.request_id);
  CHECK(r.trials[1].early);        // truncated after round 1
  CHECK_FALSE(r.trials[0].early);  // closed after the last round
  CHECK_FALSE(r.trials[2].early);
}

TEST_CASE("pbt: truncate 0 trains the whole population every round (pbt_test.go)") {
  auto r = simulate(search_config(pbt_lines(3, 4, 400, 0)), older_is_better);
  CHECK(r.shut_down);
  CHECK(plans(r) == "3x[400,800,1200,1600]");
}

TEST_CASE("pbt: population 4, 8 rounds, old is better: 2 trials train every round, 16 one round (pbt_test.go)") {
  auto r = simulate(search_config(pbt_lines(4, 8, 500, 0.5)), older_is_better);
  CHECK(r.shut_down);
  CHECK(r.trials.size() == 18);
  CHECK(plans(r) == "16x[500] 2x[500,1000,1500,2000,2500,3000,3500,4000]");
}

TEST_CASE("pbt copies explore their parent's hyperparameters within range") {
  auto config = search_config(pbt_lines(4, 6, 10, 0.5, 0.25));
  auto r = simulate(config, older_is_better);
  std::map<int64_t, nlohmann::json> hparams;
  for (const auto& t : r.trials) hparams[t.create.request_id] = nlohmann::json::parse(t.create.hparams_json);
  int perturbed = 0, copies = 0;
  for (const auto& t : r.trials) {
    if (!t.create.parent_request_id) continue;
    ++copies;
    const auto& child = hparams.at(t.create.request_id);
    const auto& parent = hparams.at(t.create.parent_request_id);
    CHECK(child["global_batch_size"] == 64);
    auto lr = child["lr"].get<double>();
    CHECK(lr >= 1e-4);
    CHECK(lr <= 1e-1);
    auto width = child["width"].get<int64_t>();
    CHECK(width >= 1);
    CHECK(width <= 64);
    auto p = parent["lr"].get<double>();
    if (std::abs(lr - std::clamp(p * 1.2, 1e-4, 1e-1)) < 1e-12 || std::abs(lr - std::clamp(p * 0.8, 1e-4, 1e-1)) < 1e-12)
      ++perturbed;
  }
  CHECK(copies == 10);
  CHECK(perturbed >= 4);  // about three in four are perturbed rather than resampled
}

TEST_CASE("the experiment seed decides every trial of asha and pbt") {
  for (const auto& lines : {asha_12 + "max_length = { batches = 900 }\n", pbt_lines(4, 4, 10, 0.5)}) {
    auto creates = [&](uint32_t seed) {
      std::vector<std::string> out;
      for (const auto& t : simulate(search_config(lines, seed), older_is_better).trials)
        out.push_back(std::to_string(t.create.trial_seed) + t.create.hparams_json +
                      std::to_string(t.create.parent_request_id));
      return out;
    };
    CHECK(creates(7) == creates(7));
    CHECK(creates(7) != creates(8));
  }
}
