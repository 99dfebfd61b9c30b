#pragma once

#include "searcher/asha_stopping_search.hpp"
#include "searcher/search_method.hpp"
#include "searcher/trial_factory.hpp"

#include <cstddef>
#include <map>
#include <vector>

namespace det::searcher {

/// Determined's promotion-based `asha` (asha.go up to 0.37). Each trial trains to its rung's
/// length and waits there; a rung promotes int(n / divisor) of the n results it holds to the next
/// rung, at once if a new result ranks among them, else the best one not yet promoted when that
/// number grows. Promotions are never revoked. Every result that promotes nobody starts a new
/// trial while fewer than max_trials (less those with invalid hyperparameters) exist. Once rung 0
/// holds max_trials results, rungs with no trial still training for them close the trials they did
/// not promote; the top rung closes each trial as it reports.
class asha_promotion_search final : public search_method {
 public:
  asha_promotion_search(asha_settings settings, trial_factory trials);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  /// Counts only a report at (or past) the length of the trial's current rung.
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  /// invalid_hp takes the trial out of every rung and replaces it; another early exit of a trial
  /// still training ranks it last in its rung, and later promotions of it pass it on as last.
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// Results in rung 0 over 1.2 × max_trials; once rung 0 holds max_trials, at least the share of
  /// valid trials closed.
  double progress() const override;
  int64_t rung_of(int64_t request_id) const override;
  bool trials_wait_at_length() const override { return true; }
  std::optional<config::length> training_target(int64_t request_id) const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

  struct result {
    int64_t request_id = 0;
    double metric = 0;  // ranked: smaller is better
    bool promoted = false;
  };
  struct promotion_rung {
    int64_t units_needed = 0;
    std::vector<result> results;  // best first
    int64_t outstanding = 0;      // trials training for this rung
  };
  const std::vector<promotion_rung>& rungs() const { return rungs_; }

 private:
  struct trial_state {
    size_t rung = 0;
    bool training = false;  // its result at `rung` is still to come
    bool exited_early = false;
    bool closed = false;
  };

  std::vector<action> record_result(int64_t request_id, double metric);
  std::vector<int64_t> promotions(promotion_rung& rung, int64_t request_id, double metric) const;
  std::vector<action> close_out_rungs();
  create_action new_trial();
  int64_t trials_counted() const;

  asha_settings settings_;
  trial_factory trials_;
  std::vector<promotion_rung> rungs_;
  std::map<int64_t, trial_state> trial_states_;
  int64_t invalid_ = 0;
  int64_t exited_ = 0;
};

} // namespace det::searcher
