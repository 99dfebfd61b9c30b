#include "searcher/asha_rungs.hpp"

#include <algorithm>
#include <cmath>

namespace det::searcher {

size_t rung::insert(int64_t request_id, double metric) {
  auto at = std::lower_bound(metrics.begin(), metrics.end(), metric,
                             [](const auto& entry, double value) { return entry.second < value; });
  auto index = static_cast<size_t>(at - metrics.begin());
  metrics.insert(at, {request_id, metric});
  return index;
}

void rung::remove(int64_t request_id) {
  auto it = std::find_if(metrics.begin(), metrics.end(),
                         [&](const auto& entry) { return entry.first == request_id; });
  if (it != metrics.end()) metrics.erase(it);
}

std::vector<rung> make_rungs(int64_t num_rungs, double divisor, int64_t max_length) {
  std::vector<rung> rungs;
  rungs.reserve(static_cast<size_t>(std::max<int64_t>(num_rungs, 0)));
  for (int64_t i = 0; i < num_rungs; ++i) {
    double downsampling = std::pow(divisor, static_cast<double>(num_rungs - i - 1));
    auto units = static_cast<int64_t>(static_cast<double>(max_length) / downsampling);
    rungs.push_back(rung{std::max<int64_t>(units, 1), {}});
  }
  return rungs;
}

double asha_progress(size_t rung0_results, int64_t max_trials, int64_t valid_exits) {
  if (max_trials <= 0) return 0.0;
  auto most = static_cast<double>(max_trials);
  double progress = static_cast<double>(rung0_results) / (1.2 * most);
  if (static_cast<int64_t>(rung0_results) == max_trials)
    progress = std::max(progress, static_cast<double>(valid_exits) / most);
  return std::clamp(progress, 0.0, 1.0);
}

double ranked_metric(double reported, bool smaller_is_better) {
  // A NaN would break the sorted order every later insert relies on.
  if (std::isnan(reported)) return exited_trial_metric;
  return smaller_is_better ? reported : -reported;
}

} // namespace det::searcher
