#include "searcher/preview.hpp"

#include "searcher/adaptive_asha_search.hpp"
#include "searcher/hyperparameter_grid.hpp"
#include "searcher/searcher.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>

namespace det::searcher {

namespace {

/// Where the trials of one successive-halving bracket stop if each rung keeps its top
/// 1/divisor (at least one) and the top rung keeps none.
void plan_bracket(const asha_settings& bracket, std::map<int64_t, int64_t>& stopped_at) {
  auto rungs = make_rungs(bracket.num_rungs, bracket.divisor, bracket.max_length.value);
  int64_t trials = bracket.max_trials;
  for (size_t i = 0; i < rungs.size(); ++i) {
    auto continued = std::max<int64_t>(static_cast<int64_t>(static_cast<double>(trials) / bracket.divisor), 1);
    auto stopped = i + 1 == rungs.size() ? trials : trials - continued;
    if (stopped > 0) stopped_at[rungs[i].units_needed] += stopped;
    trials = continued;
  }
}

/// The searcher metric of a trial's nth report in a simulated search.
using simulated_metric = std::function<double(int64_t request_id, int64_t report)>;

/// Where the trials of a search whose plan depends on its results stop: drives the real search,
/// each trial reporting at every length it is asked for, in the order it was asked.
void plan_by_simulation(const config::experiment_config& config, const simulated_metric& metric,
                        std::map<int64_t, int64_t>& stopped_at) {
  struct simulated_trial {
    int64_t target = 0;
    int64_t trained = 0;
    bool stopped = false;
  };
  searcher search(make_search_method(config));
  std::map<int64_t, simulated_trial> trials;
  std::deque<int64_t> to_create, to_report, to_exit;
  bool shut_down = false;
  auto apply = [&](const std::vector<action>& actions) {
    for (const auto& a : actions) {
      if (const auto* create = std::get_if<create_action>(&a)) {
        trials[create->request_id];
        to_create.push_back(create->request_id);
      } else if (const auto* validate = std::get_if<validate_after_action>(&a)) {
        trials[validate->request_id].target = validate->length.value;
        to_report.push_back(validate->request_id);
      } else if (const auto* stop = std::get_if<stop_action>(&a)) {
        trials[stop->request_id].stopped = true;
        to_exit.push_back(stop->request_id);
      } else {
        shut_down = true;
      }
    }
  };
  apply(search.initial_trials());
  int64_t reports = 0;
  while (!shut_down) {
    if (!to_create.empty()) {
      auto id = to_create.front();
      to_create.pop_front();
      apply(search.trial_created(id));
    } else if (!to_exit.empty()) {
      auto id = to_exit.front();
      to_exit.pop_front();
      ++stopped_at[trials[id].trained];
      apply(search.trial_exited(id));
    } else if (!to_report.empty()) {
      auto id = to_report.front();
      to_report.pop_front();
      auto& t = trials[id];
      if (t.stopped || t.trained >= t.target) continue;
      t.trained = t.target;
      apply(search.validation_completed(id, metric(id, ++reports), t.trained));
    } else {
      throw config::config_error("searcher: the " + config.searcher.name +
                                 " search cannot be previewed: it waits for results no trial will report");
    }
  }
}

} // namespace

std::vector<preview_bucket> preview(const config::experiment_config& config) {
  const auto& searcher = config.searcher;
  const auto& name = searcher.name;
  if (name != "single" && name != "random" && name != "grid" && name != "async_halving" &&
      name != "adaptive_asha" && name != "tpe" && name != "asha" && name != "pbt")
    throw config::config_error("searcher.name: the " + name + " searcher cannot be previewed" +
                               (name == "custom" ? ": the process that drives it decides as it goes" : ""));
  auto length = searcher.training_length();
  // Determined 0.38: a process that decides its own length trains until it exits (length 0 here).
  if (!length && (name == "single" || name == "random" || name == "grid")) length = config::length{};
  if (!length)
    throw config::config_error("searcher: the " + name +
                               " searcher needs max_length, or time_metric and max_time");
  std::map<int64_t, int64_t> stopped_at;
  if (name == "single") {
    stopped_at[length->value] = 1;
  } else if (name == "random" || name == "tpe") {
    stopped_at[length->value] = searcher.max_trials;
  } else if (name == "grid") {
    stopped_at[length->value] = hyperparameter_grid_size(config.hparams);
  } else if (name == "async_halving") {
    plan_bracket(asha_settings{searcher.num_rungs, searcher.divisor, searcher.max_trials,
                               searcher.max_concurrent_trials, *length, searcher.smaller_is_better},
                 stopped_at);
  } else if (name == "asha") {
    // Each result worse than every one before, as Determined's tests assume: a rung of n results
    // then promotes exactly int(n / divisor).
    plan_by_simulation(config, [&](int64_t, int64_t report) {
      return searcher.smaller_is_better ? report : -report;
    }, stopped_at);
  } else if (name == "pbt") {
    // Older trials better, so that the survivors of each round are the oldest.
    plan_by_simulation(config, [&](int64_t request_id, int64_t) {
      auto rank = static_cast<double>(request_id);
      return searcher.smaller_is_better ? rank : -rank;
    }, stopped_at);
  } else {
    for (const auto& bracket : adaptive_asha_brackets(searcher, *length)) plan_bracket(bracket, stopped_at);
  }
  std::vector<preview_bucket> buckets;
  for (const auto& [units, count] : stopped_at)
    if (count > 0) buckets.push_back(preview_bucket{count, units, length->unit});
  return buckets;
}

} // namespace det::searcher
