#pragma once

#include "searcher/search_method.hpp"
#include "searcher/trial_factory.hpp"

#include <map>
#include <string>
#include <vector>

namespace det::searcher {

/// What one population-based training search needs to know.
struct pbt_settings {
  int64_t population_size = 1;
  int64_t num_rounds = 1;
  config::length length_per_round;
  double truncate_fraction = 0;
  double resample_probability = 0;
  double perturb_factor = 0;
  bool smaller_is_better = true;
};

/// Determined 0.17's `pbt`: population_size trials each train length_per_round; once every member
/// of the population has reported, the round ends. After num_rounds rounds every member is closed.
/// Otherwise the members are ranked, the worst int(truncate_fraction × population_size) are closed,
/// and each of the best that many is copied: a new trial starts from its latest checkpoint
/// (create_action::parent_request_id) with explored hyperparameters. The other members train one
/// more round. A member that exits early ranks last in its round and leaves the population; one
/// with invalid hyperparameters is replaced by a fresh sample.
class pbt_search final : public search_method {
 public:
  pbt_search(pbt_settings settings, config::hyperparameters hparams, trial_factory trials);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  /// Counts only a report at (or past) the end of the member's round.
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// Rounds completed, and the share of this round's results in, over num_rounds.
  double progress() const override;
  bool trials_wait_at_length() const override { return true; }
  std::optional<config::length> training_target(int64_t request_id) const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

  int64_t rounds_completed() const { return rounds_completed_; }

 private:
  struct member {
    std::string hparams_json;
    int64_t rounds_trained = 0;
    bool reported = false;
    double metric = 0;
    bool exited_early = false;
  };

  int64_t round_end(const member& m) const;
  create_action add_member(create_action create);
  std::vector<action> end_round_if_complete();

  pbt_settings settings_;
  config::hyperparameters hparams_;
  trial_factory trials_;
  int64_t rounds_completed_ = 0;
  std::map<int64_t, member> members_;  // the population, by request id
  int64_t invalid_ = 0;
  int64_t exited_ = 0;
};

} // namespace det::searcher
