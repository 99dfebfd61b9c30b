#pragma once
// The rungs of an asynchronous successive-halving search (Determined's asha_stopping.go), apart
// from the search so that their arithmetic can be checked on its own.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

namespace det::searcher {

/// One rung: the training a trial needs to be ranked in it, and the ranked metrics so far,
/// ascending (the best first), a later entry before every equal metric. Kept in an
/// order-statistics tree: a search of 100,000 trials ranks each in O(log n), where a sorted
/// vector moved half its entries on every insert.
class rung {
 public:
  explicit rung(int64_t units = 0) : units_needed(units) {}

  int64_t units_needed = 0;

  /// Inserts before every equal metric and returns the index it took.
  size_t insert(int64_t request_id, double metric);
  /// Removes the trial's entry, if it has one.
  void remove(int64_t request_id);
  size_t size() const { return ranked_.size(); }
  /// Calls `f(request_id, metric)` for each entry in rank order.
  void for_each(const std::function<void(int64_t, double)>& f) const;
  /// Replaces the entries with `entries`, already in rank order (a snapshot's).
  void assign(const std::vector<std::pair<int64_t, double>>& entries);

 private:
  /// (metric, order): order falls with every insert, so that among equal metrics the later
  /// entry ranks first; the mapped value is the request id.
  using key = std::pair<double, int64_t>;
  using tree = __gnu_pbds::tree<key, int64_t, std::less<key>, __gnu_pbds::rb_tree_tag,
                                __gnu_pbds::tree_order_statistics_node_update>;
  tree ranked_;
  int64_t next_order_ = 0;
};

/// Rung i of n needs max(floor(max_length / divisor^(n-i-1)), 1) units; they are not cumulative.
std::vector<rung> make_rungs(int64_t num_rungs, double divisor, int64_t max_length);

/// The value ASHA ranks, smaller being better: the reported metric, negated when larger is better.
/// NaN ranks last, as a trial that exited early does.
double ranked_metric(double reported, bool smaller_is_better);

/// ASHA's progress (Determined's): results in rung 0 over 1.2 × max_trials, the 20 % headroom
/// because rung 0 fills up well before the last trials finish; once rung 0 holds max_trials, at
/// least the share of max_trials whose trials exited with valid hyperparameters.
double asha_progress(size_t rung0_results, int64_t max_trials, int64_t valid_exits);

/// The rank a trial that exited early takes in its rung: the worst there is.
inline constexpr double exited_trial_metric = 1.7976931348623157e308;

} // namespace det::searcher
