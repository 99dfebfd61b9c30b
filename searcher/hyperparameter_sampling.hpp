#pragma once

#include "config/hyperparameter.hpp"

#include <random>
#include <string>

namespace det::searcher {

/// One random value for every hyperparameter, drawn in name order, as a JSON object text:
/// int uniform over [minval, maxval], double uniform over [minval, maxval), log
/// base^uniform(minval, maxval), categorical a uniform choice, const as given, nested recursively.
std::string sample_hyperparameters(const config::hyperparameters& hparams, std::mt19937_64& rng);

} // namespace det::searcher
