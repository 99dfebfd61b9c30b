#pragma once

// Internal to config/: readers of the experiment config's larger sections, one file each.

#include "config/experiment_config.hpp"
#include "config/toml_reader.hpp"

namespace det::config::detail {

/// Who decides how long a trial trains when the searcher does not: the entrypoint's kind.
enum class length_decider {
  process,          ///< a command (Core API script): it trains until it exits
  harness,          ///< builtin: or plugin:, which det's harness trains to the searcher's length
  legacy_trial_class,  ///< model_def:TrialClass, which Determined's harness trains to max_length
};

/// Reads `[searcher]` from the document root, checking the fields its searcher takes and, for
/// searchers that work without a length, whether `decider` can do without one.
searcher_config read_searcher_config(table_reader& root, length_decider decider);

/// Reads `[hyperparameters]` from the document root. With `counts_required` (the grid searcher),
/// every int, double and log hyperparameter needs `count`.
hyperparameters read_hyperparameters(table_reader& root, bool counts_required);

/// A byte count at `key`: an integer, or a string with Docker's 1024-based suffixes ("256m",
/// "1.5GiB"); nullopt, with the error noted, when it is not one.
std::optional<int64_t> read_bytes(table_reader& reader, std::string_view key);

} // namespace det::config::detail
