#include "searcher/parzen_estimator.hpp"

#include "searcher/random_draw.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace det::searcher {

namespace {

// Optuna's TPESampler defaults that det does not expose.
constexpr double prior_weight = 1.0;
constexpr size_t full_weight_observations = 25;
constexpr double max_good_observations = 25;

constexpr double pi = 3.14159265358979323846;

/// Mixture weights: the observations' then the prior's, summing to 1.
std::vector<double> kernel_weights(size_t observations) {
  auto weights = tpe_observation_weights(observations);
  weights.push_back(prior_weight);
  double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  for (auto& w : weights) w /= sum;
  return weights;
}

/// An index drawn with probability proportional to `weights`.
size_t draw_index(std::mt19937_64& rng, const std::vector<double>& weights) {
  double u = draw_unit(rng) * std::accumulate(weights.begin(), weights.end(), 0.0);
  for (size_t i = 0; i + 1 < weights.size(); ++i) {
    if (u < weights[i]) return i;
    u -= weights[i];
  }
  return weights.size() - 1;
}

/// A standard normal draw by Box-Muller, from raw engine output as every draw here is.
double draw_normal(std::mt19937_64& rng) {
  double u1 = 1.0 - draw_unit(rng);  // in (0, 1], so the log is finite
  double u2 = draw_unit(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * pi * u2);
}

/// Phi(b) - Phi(a) for a <= b, taken from the tail both lie in so that it does not cancel to 0.
double normal_mass(double a, double b) {
  const double r = 1.0 / std::sqrt(2.0);
  if (a > 0) return 0.5 * (std::erfc(a * r) - std::erfc(b * r));
  if (b < 0) return 0.5 * (std::erfc(-b * r) - std::erfc(-a * r));
  return 0.5 * (std::erf(b * r) - std::erf(a * r));
}

double log_sum_exp(const std::vector<double>& terms) {
  double top = *std::max_element(terms.begin(), terms.end());
  if (top == -std::numeric_limits<double>::infinity()) return top;
  double sum = 0;
  for (double t : terms) sum += std::exp(t - top);
  return top + std::log(sum);
}

} // namespace

std::vector<double> tpe_observation_weights(size_t n) {
  std::vector<double> weights(n, 1.0);
  if (n <= full_weight_observations) return weights;
  size_t ramp = n - full_weight_observations;
  // numpy's linspace(1/n, 1, ramp): a single point is its start.
  double start = 1.0 / static_cast<double>(n);
  for (size_t i = 0; i < ramp; ++i)
    weights[i] = ramp == 1 ? start : start + (1.0 - start) * static_cast<double>(i) / static_cast<double>(ramp - 1);
  return weights;
}

size_t tpe_good_count(size_t n, double gamma) {
  return static_cast<size_t>(std::min(std::ceil(gamma * static_cast<double>(n)), max_good_observations));
}

numeric_parzen_estimator::numeric_parzen_estimator(const std::vector<double>& observations, double low,
                                                   double high, bool integral)
    : low_(integral ? low - 0.5 : low), high_(integral ? high + 0.5 : high), integral_(integral) {
  const double width = high_ - low_;
  const double prior_mu = 0.5 * (low_ + high_);

  // Each kernel as wide as the larger gap to its neighbours among the observations and the
  // prior's centre (the range's ends counting as neighbours), except that the outermost kernels
  // take the gap on their inner side (Optuna's consider_endpoints = false).
  auto centres = observations;
  centres.push_back(prior_mu);
  std::vector<size_t> order(centres.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return centres[a] < centres[b]; });
  std::vector<double> ends{low_};
  for (auto i : order) ends.push_back(centres[i]);
  ends.push_back(high_);
  const size_t m = centres.size();
  std::vector<double> sorted_sigmas(m);
  for (size_t i = 0; i < m; ++i) sorted_sigmas[i] = std::max(ends[i + 1] - ends[i], ends[i + 2] - ends[i + 1]);
  if (m >= 2) {
    sorted_sigmas[0] = ends[2] - ends[1];
    sorted_sigmas[m - 1] = ends[m] - ends[m - 1];
  }
  // The magic clip: no kernel narrower than the range over min(100, kernels + 1).
  const double min_sigma = width / std::min(100.0, 1.0 + static_cast<double>(m));
  mus_ = observations;
  sigmas_.resize(observations.size());
  for (size_t rank = 0; rank < m; ++rank)
    if (order[rank] < observations.size())
      sigmas_[order[rank]] = std::clamp(sorted_sigmas[rank], min_sigma, width);
  mus_.push_back(prior_mu);
  sigmas_.push_back(width);

  weights_ = kernel_weights(observations.size());
  for (size_t k = 0; k < mus_.size(); ++k) {
    double mass = normal_mass((low_ - mus_[k]) / sigmas_[k], (high_ - mus_[k]) / sigmas_[k]);
    log_scales_.push_back(std::log(weights_[k]) - std::log(mass));
  }
}

double numeric_parzen_estimator::sample(std::mt19937_64& rng) const {
  auto k = draw_index(rng, weights_);
  // Rejection: a kernel's centre lies within the range and its width is at most the range's, so
  // at least a third of its mass is inside and few draws are lost. (Optuna inverts the CDF.)
  double x;
  do {
    x = mus_[k] + sigmas_[k] * draw_normal(rng);
  } while (x < low_ || x > high_);
  if (integral_) x = std::clamp(std::round(x), low_ + 0.5, high_ - 0.5);
  return x;
}

double numeric_parzen_estimator::log_likelihood(double x) const {
  std::vector<double> terms(mus_.size());
  for (size_t k = 0; k < mus_.size(); ++k) {
    double s = sigmas_[k];
    if (integral_) {
      terms[k] = log_scales_[k] + std::log(normal_mass((x - 0.5 - mus_[k]) / s, (x + 0.5 - mus_[k]) / s));
    } else {
      double z = (x - mus_[k]) / s;
      terms[k] = log_scales_[k] - 0.5 * z * z - std::log(s * std::sqrt(2.0 * pi));
    }
  }
  return log_sum_exp(terms);
}

categorical_parzen_estimator::categorical_parzen_estimator(const std::vector<size_t>& observations,
                                                           size_t choices)
    : probabilities_(choices, 0.0) {
  auto weights = kernel_weights(observations.size());
  const auto n = static_cast<double>(choices);
  const double share = prior_weight / static_cast<double>(observations.size() + 1);
  const double row_sum = 1.0 + share * n;
  for (size_t k = 0; k < observations.size(); ++k) {
    for (auto& p : probabilities_) p += weights[k] * share / row_sum;
    probabilities_[observations[k]] += weights[k] / row_sum;
  }
  for (auto& p : probabilities_) p += weights.back() / n;
}

size_t categorical_parzen_estimator::sample(std::mt19937_64& rng) const {
  return draw_index(rng, probabilities_);
}

double categorical_parzen_estimator::log_likelihood(size_t choice) const {
  return std::log(probabilities_.at(choice));
}

} // namespace det::searcher
