#pragma once

#include "searcher/asha_rungs.hpp"
#include "searcher/search_method.hpp"
#include "searcher/trial_factory.hpp"
#include "searcher/trial_table.hpp"

#include <cstddef>
#include <memory>

namespace det::pb {
class AshaState;
}

namespace det::searcher {

/// What one asynchronous successive-halving search needs to know.
struct asha_settings {
  int64_t num_rungs = 1;
  double divisor = 4;
  int64_t max_trials = 1;
  /// 0: as many as it takes for one trial to reach the top rung, divisor^(num_rungs-1).
  int64_t max_concurrent_trials = 16;
  /// The top rung's length; lower rungs are fractions of it in the same unit.
  config::length max_length;
  bool smaller_is_better = true;
};

/// How many trials an ASHA search starts with: max_concurrent_trials (at most max_trials), or
/// without a limit enough for one trial to reach the top rung, divisor^(num_rungs-1).
int64_t initial_trial_count(const asha_settings& settings);

/// Determined 0.38's `async_halving`: ASHA that stops trials instead of promoting them. Every
/// trial is asked to train the whole max_length; each validation ranks it in every rung whose
/// length it reached, and a trial outside the top 1/divisor of a rung, or in the top rung, is
/// stopped. Each stop starts a replacement while the trials requested, less those with invalid
/// hyperparameters, are fewer than max_trials, which keeps concurrency constant.
/// Once the search stopped a trial, or the trial exited early, its later reports change nothing:
/// det stops trials gracefully, so a stopped trial may still validate once on its way out.
class asha_stopping_search final : public search_method {
 public:
  /// `trials` may be shared with other searches (the brackets of adaptive_asha), so that request
  /// ids stay unique and samples replay in one order.
  asha_stopping_search(asha_settings settings, std::shared_ptr<trial_factory> trials);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  /// invalid_hp takes the trial's metrics out of every rung and always replaces it; another
  /// early exit ranks the trial last in its current rung and replaces it if trials remain.
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// Ranked trials in rung 0 over 1.2 × max_trials; once rung 0 holds max_trials, at least the
  /// share of max_trials that exited with valid hyperparameters.
  double progress() const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

  const asha_settings& settings() const { return settings_; }
  const std::vector<rung>& rungs() const { return rungs_; }
  /// The rung the trial is to be ranked in next, or was last ranked in; 0 for an unknown trial.
  int64_t rung_of(int64_t request_id) const override;

  /// Its state without the trial factory, which the brackets of adaptive_asha share.
  void snapshot_state(pb::AshaState& state) const;
  /// Throws std::runtime_error, changing nothing, when `state` has another number of rungs.
  void restore_state(const pb::AshaState& state);

 private:
  struct trial_state {
    size_t rung = 0;
    /// Stopped by the search or exited early: its reports no longer count.
    bool done = false;
  };

  create_action next_trial();
  bool trials_remain() const;

  asha_settings settings_;
  std::shared_ptr<trial_factory> trials_;
  std::vector<rung> rungs_;
  trial_table<trial_state> trial_states_;
  /// Creates handed out. Counted at request, not at creation, so that replacements asked for
  /// while earlier ones are still being created cannot overshoot max_trials.
  int64_t requested_ = 0;
  int64_t invalid_ = 0;
  int64_t completed_ = 0;
};

} // namespace det::searcher
