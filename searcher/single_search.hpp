#pragma once

#include "searcher/search_method.hpp"
#include "searcher/trial_factory.hpp"

namespace det::searcher {

/// One trial with sampled (usually constant) hyperparameters, trained to the configured length
/// and never stopped early (Determined's `single`). Without a length (Determined 0.38) the trial
/// trains until its process exits, and reports its progress itself.
class single_search final : public search_method {
 public:
  single_search(std::optional<config::length> max_length, trial_factory trials);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  void trial_progress(int64_t request_id, double share) override;
  /// The trial's validated training over its length, or the progress it reported if that is
  /// more; 1 once it exited.
  double progress() const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

 private:
  std::optional<config::length> max_length_;
  trial_factory trials_;
  int64_t request_id_ = 0;
  int64_t length_trained_ = 0;
  double reported_progress_ = 0;
  bool exited_ = false;
};

} // namespace det::searcher
