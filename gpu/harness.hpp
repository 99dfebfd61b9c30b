#pragma once

#include "det/trial.hpp"
#include "gpu/training_plan.hpp"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace det::harness {

struct progress {
  int64_t batches = 0;
  int64_t records = 0;
  double epochs = 0;
};

/// A checkpoint the trial finished saving (gpu/checkpoint_files.hpp).
struct saved_checkpoint {
  std::string uuid;
  progress at;
  std::map<std::string, int64_t> resources;  // file name -> bytes
};

/// The trial rejects its hyperparameters: the Trial API's exception, which built-in and plugin
/// trials throw alike. The searcher replaces such a trial instead of counting it (Determined's
/// InvalidHP early exit).
using invalid_hyperparameters = det::invalid_hyperparameters;

/// Receives what a trial produces; the worker turns it into messages for the master.
class reporter {
 public:
  virtual ~reporter();
  /// "loss" (mean over the period) and "samples_per_second".
  virtual void training_metrics(const progress&, const std::map<std::string, double>&) = 0;
  /// "validation_loss" and "validation_accuracy".
  virtual void validation_metrics(const progress&, const std::map<std::string, double>&) = 0;
  virtual void log(const std::string& line) = 0;
  /// Checked after every batch: training stops gracefully once it returns true. In a distributed
  /// run the processes stop once it does in any of them, after the same batch: the next at which
  /// they check together, about every 50 ms of training.
  virtual bool should_stop() = 0;
  /// A checkpoint is complete on the checkpoint storage.
  virtual void checkpoint_saved(const saved_checkpoint&) = 0;
  /// Profiling: group "system" (sampled utilisation) or "timings" (mean seconds per step kind).
  virtual void profile_metrics(const std::string& group, const progress&, const std::map<std::string, double>&) {}
};

/// Trains per the plan; returns whether it stopped early on request (should_stop). Throws
/// std::runtime_error with a sentence on bad hyperparameters or data.
bool run_trial(const training_plan&, reporter&);

}  // namespace det::harness
