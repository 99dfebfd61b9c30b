#pragma once

#include "config/length.hpp"

#include <cstdint>
#include <string>
#include <variant>

namespace det::searcher {

/// Start a new trial. Request ids are the searcher's names for trials, counting from 1.
struct create_action {
  int64_t request_id = 0;
  /// Seeds the trial's own randomness; in [0, 2^31) as in Determined.
  uint32_t trial_seed = 0;
  /// Every hyperparameter's sampled value, as a JSON object.
  std::string hparams_json = "{}";
  /// PBT: the trial whose latest checkpoint this one starts from; 0 for a fresh start.
  int64_t parent_request_id = 0;
};

/// Train the trial until its total training reaches `length`, then validate and report.
struct validate_after_action {
  int64_t request_id = 0;
  config::length length;
};

/// Close the trial: it stops gracefully (checkpoints and exits) if it is training, and ends if it
/// is waiting for a promotion.
struct stop_action {
  int64_t request_id = 0;
  /// Whether the search cut the trial short, rather than closing it after its last length.
  bool early = true;
};

/// The search is over. `cancel`: every trial was canceled by a user; `failure`: every trial failed.
struct shutdown_action {
  bool cancel = false;
  bool failure = false;
};

/// A decision of a searcher, for the experiment to carry out.
using action = std::variant<create_action, validate_after_action, stop_action, shutdown_action>;

/// Why a trial ended before its searcher was done with it.
enum class exit_reason {
  /// The trial failed (after its restarts).
  errored,
  /// A user stopped the trial.
  user_canceled,
  /// The training code rejected its hyperparameters.
  invalid_hp,
};

} // namespace det::searcher
