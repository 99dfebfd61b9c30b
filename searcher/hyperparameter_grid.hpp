#pragma once

#include "config/document_limits.hpp"
#include "config/hyperparameter.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace det::searcher {

/// Every point of the grid over `hparams`, each a JSON object text, in Determined's order:
/// one axis per hyperparameter in name order (a nested table contributes one axis per entry,
/// recursively; an empty one is the single value {}), the first axis varying slowest.
/// Axis values: const its value; categorical every value; int `count` points clamped to the
/// integers in range, round(min + i·(max-min)/(count-1)), or round((min+max)/2) for one; double
/// min + i·(max-min)/(count-1), or the midpoint for one; log base raised to those exponents.
/// With no hyperparameters the grid is one empty point. Throws config::config_error naming the
/// hyperparameter when an int, double or log one has no count.
/// Throws config::config_error, before building anything, when the grid has more than
/// `max_points` points (the gateway holds a submission to the master's max_grid_trials first).
std::vector<std::string> hyperparameter_grid(const config::hyperparameters& hparams,
                                             int64_t max_points = config::largest_max_grid_trials);

/// Why a grid has more than `max_points` points ("...; WHOSE_LIMIT at most N trials: ..."), counted
/// without building any; nothing when it has not.
std::optional<std::string> grid_too_large(const config::hyperparameters& hparams, int64_t max_points,
                                          const std::string& whose_limit);

/// The number of points hyperparameter_grid returns, without building them (INT64_MAX when the
/// product is larger).
int64_t hyperparameter_grid_size(const config::hyperparameters& hparams);

} // namespace det::searcher
