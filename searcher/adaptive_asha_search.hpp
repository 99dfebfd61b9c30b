#pragma once

#include "searcher/asha_stopping_search.hpp"

#include <optional>

namespace det::searcher {

/// The rungs of each bracket (Determined's adaptive_asha.go), most aggressive first: the
/// configured bracket_rungs, or by mode from maxRungs = min(max_rungs,
/// int(log(max_length)/log(divisor))+1, int(log(max_trials)/log(divisor))+1):
/// aggressive [maxRungs], standard [(maxRungs-1)/2+1 .. maxRungs], conservative [1 .. maxRungs].
std::vector<int64_t> adaptive_bracket_rungs(const config::searcher_config& config, int64_t max_length);

/// Trials per bracket, so that every bracket gets about the same training budget: weight
/// divisor^(rungs-1)/rungs, each at least 1, the remainder to the first bracket.
std::vector<int64_t> bracket_max_trials(int64_t max_trials, double divisor,
                                        const std::vector<int64_t>& bracket_rungs);

/// Concurrency per bracket: max_concurrent_trials (at least one per bracket) split evenly with
/// the remainder to the first brackets; with 0, max(the last bracket's trials, int(divisor)) each.
std::vector<int64_t> bracket_max_concurrent_trials(int64_t max_concurrent_trials, double divisor,
                                                   const std::vector<int64_t>& bracket_max_trials);

/// Every bracket of an adaptive_asha search, each trained to `max_length`.
std::vector<asha_settings> adaptive_asha_brackets(const config::searcher_config& config,
                                                  config::length max_length);

/// Determined's `adaptive_asha`: one async_halving search per bracket run side by side (its
/// tournament search). Every event goes to the bracket that created the trial.
class adaptive_asha_search final : public search_method {
 public:
  adaptive_asha_search(const std::vector<asha_settings>& brackets, trial_factory trials);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// The mean of the brackets' progress.
  double progress() const override;
  /// The rung within the trial's bracket.
  int64_t rung_of(int64_t request_id) const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

  size_t bracket_count() const { return brackets_.size(); }
  const asha_stopping_search& bracket(size_t index) const { return brackets_.at(index); }
  /// The bracket that created the trial; nullopt for a request id no bracket handed out.
  std::optional<size_t> bracket_of(int64_t request_id) const;

 private:
  std::vector<action> claim(size_t bracket, std::vector<action> actions);

  std::shared_ptr<trial_factory> trials_;
  std::vector<asha_stopping_search> brackets_;
  trial_table<size_t> bracket_of_;
};

} // namespace det::searcher
