#pragma once
// builtin:simulate: a trial that trains nothing. Its metrics follow a curve
// computed from its hyperparameters and seed, at a configurable speed, so
// that searches and the control plane can be tested and benchmarked without
// spending the machine on training.

#include "gpu/harness.hpp"

namespace det::harness {

/// The `[data]` settings of builtin:simulate (all optional).
struct simulation_settings {
  double seconds_per_batch = 0;  // wall time one simulated batch takes
  double noise = 0;              // standard deviation added to each reported loss
  double time_constant = 100;    // batches for the loss to fall by a factor of e toward its floor
  int64_t batch_size = 1;        // hyperparameter global_batch_size, for records
};

/// Throws std::runtime_error naming the key when a setting has the wrong type or range.
simulation_settings parse_simulation_settings(const std::string& hparams_json,
                                              const std::string& data_json);

/// The loss the curve settles to for these hyperparameters: in [0.05, 1),
/// smooth in every numeric hyperparameter, the same for the same values.
double simulated_loss_floor(const std::string& hparams_json);

/// Trains builtin:simulate on the Trial API's loop (gpu/trial_loop.hpp).
bool run_simulated_trial(const training_plan& plan, reporter& out);

} // namespace det::harness
