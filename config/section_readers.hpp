#pragma once

// Internal to config/: readers of the experiment config's larger sections, one file each.

#include "config/experiment_config.hpp"
#include "config/toml_reader.hpp"

namespace det::config::detail {

/// Reads `[searcher]` from the document root, checking the fields its searcher takes.
searcher_config read_searcher_config(table_reader& root);

/// Reads `[hyperparameters]` from the document root. With `counts_required` (the grid searcher),
/// every int, double and log hyperparameter needs `count`.
hyperparameters read_hyperparameters(table_reader& root, bool counts_required);

} // namespace det::config::detail
