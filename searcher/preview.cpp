#include "searcher/preview.hpp"

#include "searcher/adaptive_asha_search.hpp"
#include "searcher/hyperparameter_grid.hpp"

#include <algorithm>
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

} // namespace

std::vector<preview_bucket> preview(const config::experiment_config& config) {
  const auto& searcher = config.searcher;
  const auto& name = searcher.name;
  if (name != "single" && name != "random" && name != "grid" && name != "async_halving" &&
      name != "adaptive_asha" && name != "tpe")
    throw config::config_error("searcher.name: the " + name + " searcher cannot be previewed");
  auto length = searcher.training_length();
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
  } else {
    for (const auto& bracket : adaptive_asha_brackets(searcher, *length)) plan_bracket(bracket, stopped_at);
  }
  std::vector<preview_bucket> buckets;
  for (const auto& [units, count] : stopped_at)
    if (count > 0) buckets.push_back(preview_bucket{count, units, length->unit});
  return buckets;
}

} // namespace det::searcher
