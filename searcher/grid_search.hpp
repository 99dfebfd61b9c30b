#pragma once

#include "searcher/search_method.hpp"

#include <random>
#include <string>
#include <unordered_map>

namespace det::searcher {

/// Determined's `grid`: one trial per grid point, each trained the whole max_length and never
/// stopped. Points are taken from the end of the list; at most max_concurrent_trials (0: no
/// limit) run at a time, and each exit starts the next point. A trial with invalid
/// hyperparameters is not replaced: its point counts as done.
class grid_search final : public search_method {
 public:
  /// `points` as hyperparameter_grid builds them; trial seeds come from `experiment_seed`.
  grid_search(std::vector<std::string> points, int64_t max_concurrent_trials, std::optional<config::length> max_length,
              uint32_t experiment_seed);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// Each point counts 1 once its trial exited, else the trial's reported share of max_length;
  /// the sum is divided by the number of points.
  void trial_progress(int64_t request_id, double share) override;
  double progress() const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

 private:
  create_action next_point();

  std::vector<std::string> remaining_;
  int64_t grid_size_;
  int64_t max_concurrent_trials_;
  std::optional<config::length> max_length_;  // none: each trial trains until its process exits
  std::mt19937_64 rng_;
  int64_t next_request_id_ = 1;
  std::unordered_map<int64_t, double> trial_progress_;
};

} // namespace det::searcher
