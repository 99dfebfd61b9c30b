#include "storage/checkpoint_gc.hpp"

#include <algorithm>
#include <map>

namespace det::storage {

namespace {

/// Best first; without a metric last (Determined's NULLS LAST); ties by order.
bool ranks_before(const gc_candidate& a, const gc_candidate& b, bool smaller_is_better) {
  if (a.metric.has_value() != b.metric.has_value()) return a.metric.has_value();
  if (a.metric && *a.metric != *b.metric) return smaller_is_better ? *a.metric < *b.metric : *a.metric > *b.metric;
  return a.order < b.order;
}

/// rank[i] is candidate i's 1-based position among `members` sorted by `before`.
template <class Before>
void assign_ranks(std::vector<size_t> members, Before before, std::vector<int64_t>& rank) {
  std::stable_sort(members.begin(), members.end(), before);
  for (size_t r = 0; r < members.size(); ++r) rank[members[r]] = static_cast<int64_t>(r) + 1;
}

} // namespace

std::set<std::string> checkpoints_to_delete(const std::vector<gc_candidate>& candidates, const gc_policy& policy,
                                            bool smaller_is_better, const std::set<std::string>& keep) {
  const size_t n = candidates.size();
  auto by_metric = [&](size_t a, size_t b) { return ranks_before(candidates[a], candidates[b], smaller_is_better); };
  auto by_recency = [&](size_t a, size_t b) {
    if (candidates[a].steps_completed != candidates[b].steps_completed)
      return candidates[a].steps_completed > candidates[b].steps_completed;
    return candidates[a].order > candidates[b].order;
  };
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  std::map<int64_t, std::vector<size_t>> by_trial;
  for (size_t i = 0; i < n; ++i) by_trial[candidates[i].trial_id].push_back(i);

  std::vector<int64_t> experiment_rank(n), trial_rank(n), trial_order_rank(n);
  assign_ranks(all, by_metric, experiment_rank);
  for (const auto& [trial, members] : by_trial) {
    assign_ranks(members, by_metric, trial_rank);
    assign_ranks(members, by_recency, trial_order_rank);
  }
  std::set<std::string> doomed;
  for (size_t i = 0; i < n; ++i) {
    const auto& c = candidates[i];
    bool not_best = experiment_rank[i] > policy.save_experiment_best && trial_rank[i] > policy.save_trial_best;
    if ((not_best || !c.metric) && trial_order_rank[i] > policy.save_trial_latest && !keep.count(c.uuid))
      doomed.insert(c.uuid);
  }
  return doomed;
}

} // namespace det::storage
