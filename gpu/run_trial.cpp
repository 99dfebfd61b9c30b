#include <stdexcept>

#include "gpu/builtin_trials.hpp"
#include "gpu/simulated_trial.hpp"

namespace det::harness {

reporter::~reporter() = default;

bool run_trial(const training_plan& plan, reporter& out) {
  if (plan.trial_name == "mlp" || plan.trial_name == "cnn" || plan.trial_name == "gpt")
    return run_torch_trial(plan, out);
  if (plan.trial_name == "simulate")
    return run_simulated_trial(plan, out);
  if (plan.trial_name == "plugin")
    return run_plugin_trial(plan, out);
  throw std::runtime_error("There is no built-in trial 'builtin:" + plan.trial_name +
                           "'; the built-in trials are builtin:mlp, builtin:cnn, builtin:gpt and builtin:simulate.");
}

} // namespace det::harness
