#pragma once

#include "searcher/search_method.hpp"
#include "searcher/trial_factory.hpp"

namespace det::searcher {

/// One trial with sampled (usually constant) hyperparameters, trained to the configured length
/// and never stopped early (Determined's `single`).
class single_search final : public search_method {
 public:
  single_search(config::length max_length, trial_factory trials);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// The trial's reported training over its length; 1 once it exited.
  double progress() const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

 private:
  config::length max_length_;
  trial_factory trials_;
  int64_t request_id_ = 0;
  int64_t length_trained_ = 0;
  bool exited_ = false;
};

} // namespace det::searcher
