#pragma once
// The harness's training loop for any det::trial (include/det/trial.hpp): builtin:mlp and user
// plugins alike.

#include "det/trial.hpp"
#include "gpu/harness.hpp"

#include <memory>
#include <string>

namespace det::harness {

/// Seconds per kind of step, summed over a reporting period.
class step_timings {
 public:
  explicit step_timings(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  void add(const std::string& name, double seconds);
  /// Mean seconds per step of each kind since the last call; empty when nothing was timed.
  std::map<std::string, double> close();

 private:
  bool enabled_;
  std::map<std::string, std::pair<double, int64_t>> sums_;
};

/// det::trial_context from a training plan: its hyperparameters, data settings and seed.
/// Timings the trial records go to `timings`, which must outlive it.
std::unique_ptr<det::trial_context> make_trial_context(const training_plan& plan, reporter& out, step_timings& timings);

/// Trains `t` as the plan says: resumes from plan.resume_from (or starts from the weights of
/// plan.warm_start_from), trains until plan.length, reports training metrics (the mean of each
/// metric over every report_every_batches, plus samples_per_second) and validations every
/// min_validation_period_batches and at the end, checkpoints every min_checkpoint_period_batches,
/// at the end and when stopped early. `format` names the trial's checkpoint layout, which a
/// resume checks. In a distributed run (plan.peers) see det::trial_context::rank(): only the chief
/// reports and checkpoints. Returns whether it stopped early on request.
bool run_trial_loop(det::trial& t, const training_plan& plan, reporter& out, const std::string& format,
                    step_timings& timings);

} // namespace det::harness
