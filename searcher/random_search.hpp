#pragma once

#include "searcher/search_method.hpp"
#include "searcher/trial_factory.hpp"

#include <unordered_map>
#include <unordered_set>

namespace det::searcher {

/// Determined's `random`: max_trials independent samples, each trained the whole max_length and
/// never stopped. At most max_concurrent_trials (0: no limit) run at a time; each exit starts
/// the next. A trial with invalid hyperparameters does not count: another sample replaces it.
class random_search final : public search_method {
 public:
  random_search(int64_t max_trials, int64_t max_concurrent_trials, std::optional<config::length> max_length,
                trial_factory trials);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// Each valid trial counts 1 once exited, else its reported share of max_length; the sum is
  /// divided by max_trials.
  void trial_progress(int64_t request_id, double share) override;
  double progress() const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

 private:
  int64_t max_trials_;
  int64_t max_concurrent_trials_;
  std::optional<config::length> max_length_;  // none: each trial trains until its process exits
  trial_factory trials_;
  /// Trials handed out, less those with invalid hyperparameters.
  int64_t counted_ = 0;
  std::unordered_map<int64_t, double> trial_progress_;
  /// The sum of trial_progress_, kept as it changes: progress() is asked at every step of a search.
  double progress_sum_ = 0;
  std::unordered_set<int64_t> invalid_;

  void set_progress(int64_t request_id, double share);
};

} // namespace det::searcher
