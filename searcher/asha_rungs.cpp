#include "searcher/asha_rungs.hpp"

#include <algorithm>
#include <cmath>

namespace det::searcher {

size_t rung::insert(int64_t request_id, double metric) {
  const key at{metric, --next_order_};
  ranked_.insert({at, request_id});
  return ranked_.order_of_key(at);
}

void rung::remove(int64_t request_id) {
  for (auto it = ranked_.begin(); it != ranked_.end(); ++it)
    if (it->second == request_id) {
      ranked_.erase(it);
      return;
    }
}

void rung::for_each(const std::function<void(int64_t, double)>& f) const {
  for (const auto& [at, request_id] : ranked_) f(request_id, at.first);
}

void rung::assign(const std::vector<std::pair<int64_t, double>>& entries) {
  ranked_.clear();
  const auto n = static_cast<int64_t>(entries.size());
  for (int64_t i = 0; i < n; ++i) ranked_.insert({key{entries[i].second, i - n}, entries[i].first});
  next_order_ = -n;
}

std::vector<rung> make_rungs(int64_t num_rungs, double divisor, int64_t max_length) {
  std::vector<rung> rungs;
  rungs.reserve(static_cast<size_t>(std::max<int64_t>(num_rungs, 0)));
  for (int64_t i = 0; i < num_rungs; ++i) {
    double downsampling = std::pow(divisor, static_cast<double>(num_rungs - i - 1));
    auto units = static_cast<int64_t>(static_cast<double>(max_length) / downsampling);
    rungs.emplace_back(std::max<int64_t>(units, 1));
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
