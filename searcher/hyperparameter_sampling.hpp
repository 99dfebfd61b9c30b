#pragma once

#include "config/hyperparameter.hpp"

#include <random>
#include <string>

namespace det::searcher {

/// One random value for every hyperparameter, drawn in name order, as a JSON object text:
/// int uniform over [minval, maxval], double uniform over [minval, maxval), log
/// base^uniform(minval, maxval), categorical a uniform choice, const as given, nested recursively.
std::string sample_hyperparameters(const config::hyperparameters& hparams, std::mt19937_64& rng);

/// PBT's explore step (Determined 0.17's pbt.go) on the `parent_json` sample, in name order: each
/// non-const value is resampled with probability `resample_probability`; otherwise int, double and
/// log values are multiplied by 1 + perturb_factor or 1 - perturb_factor with equal chance (ints
/// rounded up, resp. down) and clamped to their range (log ranges in value space), while
/// categorical values stay. Throws std::runtime_error when `parent_json` lacks a value.
std::string explore_hyperparameters(const config::hyperparameters& hparams, const std::string& parent_json,
                                    double resample_probability, double perturb_factor,
                                    std::mt19937_64& rng);

} // namespace det::searcher
