#pragma once

#include "config/experiment_config.hpp"
#include "searcher/search_method.hpp"
#include "searcher/trial_factory.hpp"

#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

namespace det::searcher {

/// What a tpe search reads from the config. The TPE fields default to Optuna's TPESampler.
struct tpe_settings {
  int64_t max_trials = 0;
  /// 0 means no limit.
  int64_t max_concurrent_trials = 16;
  config::length max_length;
  bool smaller_is_better = true;
  /// Trials sampled at random (as `random` samples them) until this many have results.
  int64_t n_startup_trials = 10;
  /// Candidates drawn from the good density per hyperparameter; the best l(x)/g(x) is proposed.
  int64_t n_ei_candidates = 24;
  /// The good observations are the best min(ceil(gamma * n), 25) of n.
  double gamma = 0.1;
};

/// The settings `searcher` gives a tpe search that trains each trial `max_length`.
tpe_settings tpe_settings_for(const config::searcher_config& searcher, config::length max_length);

/// `tpe`: Bayesian search with a univariate Tree-structured Parzen Estimator (Bergstra et al.
/// 2011), after Optuna's TPESampler. Every trial trains the whole max_length and is never
/// stopped; its result is its last validation metric. Until n_startup_trials trials have results,
/// new trials are random_search's samples for the same seed; after that each hyperparameter is
/// proposed on its own: the results split into good and bad by gamma, a Parzen density over each
/// (over the exponent for `log`, over the unit cells of the range for `int`, category weights for
/// `categorical`), and of n_ei_candidates draws from the good density the one with the largest
/// l(x)/g(x) wins. At most max_concurrent_trials (0: no limit) run at a time; each exit starts
/// the next, proposed from every result known then. A trial with invalid hyperparameters does not
/// count and does not enter the model: another trial replaces it.
///
/// Kept from Optuna's default univariate TPESampler: the random phase lasting until
/// n_startup_trials results exist, default_gamma and default_weights (older observations weigh
/// less past 25), the prior kernel of weight 1, the magic clip and consider_endpoints = false
/// (parzen_estimator.hpp), `int` as a discrete range of step 1, `log` modelled in exponent space.
/// Simplified: no pruned or running trials in the model (constant_liar off, as Optuna's default),
/// kernels sampled by rejection rather than by inverting the CDF, and a categorical sampled from
/// its mixed probabilities rather than kernel by kernel (the same distribution).
class tpe_search final : public search_method {
 public:
  /// Throws config::config_error for settings Optuna would refuse.
  tpe_search(tpe_settings settings, config::hyperparameters hparams, uint32_t experiment_seed);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  std::vector<action> validation_completed(int64_t request_id, double metric,
                                           int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// As random_search: each valid trial counts 1 once exited, else its reported share of
  /// max_length; the sum is divided by max_trials.
  double progress() const override;
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

 private:
  /// A finished trial as the model sees it.
  struct observation {
    std::vector<double> point;
    /// The last validation metric, oriented so that smaller is better.
    double loss = 0;
  };

  create_action next_trial();
  std::vector<double> propose();

  tpe_settings settings_;
  config::hyperparameters hparams_;
  trial_factory startup_trials_;
  /// Draws the model's candidates and the seeds of the trials it proposes.
  std::mt19937_64 rng_;
  int64_t next_request_id_ = 1;
  /// Trials handed out, less those with invalid hyperparameters.
  int64_t counted_ = 0;
  /// The hyperparameters of each trial not yet exited, as the model's coordinates: one number
  /// per hyperparameter other than const, in name order (an int's value, a double's value, a
  /// log's exponent, a categorical's index).
  std::map<int64_t, std::vector<double>> points_;
  std::map<int64_t, double> last_loss_;
  /// By request id: Optuna weighs observations in trial order.
  std::map<int64_t, observation> observations_;
  std::unordered_map<int64_t, double> trial_progress_;
  std::set<int64_t> invalid_;
};

} // namespace det::searcher
