#pragma once
// The rungs of an asynchronous successive-halving search (Determined's asha_stopping.go), apart
// from the search so that their arithmetic can be checked on its own.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace det::searcher {

/// One rung: the training a trial needs to be ranked in it, and the ranked metrics so far.
struct rung {
  int64_t units_needed = 0;
  /// (request id, ranked metric), ascending by metric: the best first.
  std::vector<std::pair<int64_t, double>> metrics;

  /// Inserts before every equal metric and returns the index it took.
  size_t insert(int64_t request_id, double metric);
  /// Removes the trial's first entry, if it has one.
  void remove(int64_t request_id);
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
