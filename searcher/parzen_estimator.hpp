#pragma once
// The densities of a univariate Tree-structured Parzen Estimator (Bergstra et al. 2011), with
// the defaults of Optuna's TPESampler: a prior kernel of weight 1, the magic clip of kernel
// widths, no wide kernels at the endpoints, and recent observations weighted more once there
// are more than 25.

#include <cstddef>
#include <random>
#include <vector>

namespace det::searcher {

/// Optuna's default_weights: 1 each for up to 25 observations; beyond that the oldest n - 25
/// ramp linearly from 1/n up to 1. `n` observations in trial order.
std::vector<double> tpe_observation_weights(size_t n);

/// How many of `n` observations are the good ones: Optuna's default_gamma, min(ceil(gamma * n), 25),
/// with `gamma` in place of its 0.1.
size_t tpe_good_count(size_t n, double gamma);

/// A mixture of normals truncated to [low, high], one on each observation plus a prior over the
/// whole range. With `integral`, the values are the integers of [low, high], each standing for
/// the unit interval around it (Optuna's discrete distribution with step 1).
class numeric_parzen_estimator {
 public:
  /// `observations` in trial order, each within [low, high]; low < high, or low <= high if integral.
  numeric_parzen_estimator(const std::vector<double>& observations, double low, double high, bool integral);

  /// A value within [low, high], integral if the estimator is.
  double sample(std::mt19937_64& rng) const;
  /// The log density at `x`; for an integral estimator the log probability of the integer `x`.
  double log_likelihood(double x) const;

 private:
  /// Where the kernels are truncated: [low, high], widened by half a unit each side if integral.
  double low_;
  double high_;
  bool integral_;
  std::vector<double> mus_;
  std::vector<double> sigmas_;
  std::vector<double> weights_;
  /// log(weight / truncated mass) of each kernel, the part of its log density not depending on x.
  std::vector<double> log_scales_;
};

/// A distribution over `choices` categories: each observation a kernel that puts 1 on its own
/// category plus an even share of the prior weight on every category, with a uniform prior
/// kernel (Optuna's categorical distributions, mixed with the observation weights).
class categorical_parzen_estimator {
 public:
  /// `observations` in trial order, each below `choices`.
  categorical_parzen_estimator(const std::vector<size_t>& observations, size_t choices);

  size_t sample(std::mt19937_64& rng) const;
  /// The log probability of `choice`.
  double log_likelihood(size_t choice) const;

 private:
  std::vector<double> probabilities_;
};

} // namespace det::searcher
