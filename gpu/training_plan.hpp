#pragma once

#include <cstdint>
#include <string>

#include "gpu/collective.hpp"

namespace det::harness {

enum class unit { batches, records, epochs };

/// What the training loop counts of how a trial hands its training metrics over: each batch whose
/// train_batch returned metrics (on a GPU, a read that waits for the device) and each
/// take_training_metrics call (once per reporting period).
struct loop_statistics {
  int64_t batches = 0;
  int64_t batches_with_metrics = 0;
  int64_t metric_takes = 0;
  int64_t reports = 0;
};

/// One trial's work for the harness: what to train, on which data, and for how long.
struct training_plan {
  std::string trial_name = "mlp";  // builtin:NAME (mlp, simulate), or "plugin"
  /// plugin: the shared library (an absolute path) and the class DET_TRIAL exported.
  std::string plugin_library;
  std::string plugin_class;
  /// {"global_batch_size":64,"learning_rate":0.001,"hidden_sizes":[256,128],"dropout":0.1,
  ///  "optimizer":"adam"|"sgd","momentum":0.9}; missing keys take these defaults (momentum 0).
  std::string hparams_json;
  /// {"dataset":"fashion-mnist"|"synthetic","data_dir":"...","synthetic_train_size":4096,
  ///  "synthetic_val_size":1024,"validation_limit":N}
  std::string data_json;
  uint64_t seed = 0;
  unit length_unit = unit::batches;
  int64_t length = 0;                          // train until this total length
  int64_t min_validation_period_batches = 0;   // 0 = validate only at the end
  int64_t report_every_batches = 100;          // training report period; 0 = only at the end
  int64_t records_per_epoch = 0;               // 0 = the training set's size
  /// Checkpoints go to checkpoint_dir/<uuid>/: every min_checkpoint_period_batches (0: never on
  /// a period), when the trial reaches its length and when it stops early. "" saves none.
  std::string checkpoint_dir;
  int64_t min_checkpoint_period_batches = 0;
  std::string resume_from;      // a checkpoint directory to continue from, its progress included
  std::string warm_start_from;  // a checkpoint directory whose weights to start from, progress at 0
  bool profiling = false;       // report "system" samples every second and "timings" per period
  std::string mixed_precision = "O0";  // [optimizations], for the trial to apply where it can
  double gradient_clip_norm = 0;
  bool cuda_graph = false;             // [optimizations] cuda_graph
  /// The processes this one trains with, when the trial's slots span several agents; the worker
  /// owns them. nullptr: it trains alone.
  collective* peers = nullptr;
  /// Where the loop counts its metric reads (tests and det-trial-bench); nullptr: nowhere.
  loop_statistics* statistics = nullptr;
};

}  // namespace det::harness
