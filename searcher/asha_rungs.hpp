#pragma once
// The rungs of an asynchronous successive-halving search (Determined's asha_stopping.go), apart
// from the search so that their arithmetic can be checked on its own.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace det::searcher {

/// One rung: the training a trial needs to be ranked in it, and the ranked metrics so far,
/// ascending (the best first), a later entry before every equal metric. Kept in sorted blocks of
/// at most `block_capacity` entries with a Fenwick tree of their sizes: a search of 100,000 trials
/// ranks each in O(log n) with a binary search over contiguous memory and one short move, where
/// a sorted vector moved half its entries on every insert and an order-statistics tree spent a
/// third of the search's time following pointers through cold nodes.
class rung {
 public:
  explicit rung(int64_t units = 0) : units_needed(units) {}

  int64_t units_needed = 0;

  /// Inserts before every equal metric and returns the index it took.
  size_t insert(int64_t request_id, double metric);
  /// Removes the trial's entry, if it has one.
  void remove(int64_t request_id);
  size_t size() const { return size_; }
  /// Calls `f(request_id, metric)` for each entry in rank order.
  void for_each(const std::function<void(int64_t, double)>& f) const;
  /// Replaces the entries with `entries` (a snapshot's, in rank order: equal metrics keep theirs).
  void assign(std::vector<std::pair<int64_t, double>> entries);

  static constexpr size_t block_capacity = 256;

 private:
  /// Ranked by (metric, order): order falls with every insert, so that among equal metrics the
  /// later entry ranks first.
  struct entry {
    double metric;
    int64_t order;
    int64_t request_id;
    bool operator<(const entry& other) const {
      return metric < other.metric || (metric == other.metric && order < other.order);
    }
  };

  /// Splits the full block in two.
  void split(size_t block);
  /// The Fenwick tree over the blocks' sizes, after blocks were added or taken away.
  void recount();
  /// Entries in the blocks before `block`.
  size_t entries_before(size_t block) const;

  std::vector<std::vector<entry>> blocks_;  // none empty; each sorted, and before the next
  std::vector<entry> lasts_;                // each block's last entry, searched to find a block
  std::vector<size_t> counts_;              // Fenwick tree: counts_[i-1] sums a range of sizes
  size_t size_ = 0;
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
