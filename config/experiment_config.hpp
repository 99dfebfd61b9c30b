#pragma once

#include "config/config_error.hpp"
#include "config/environment_config.hpp"
#include "config/hyperparameter.hpp"
#include "config/length.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace det::config {

/// `[searcher]`: Determined's searcher fields (determined-reference §2.2). Fields of searchers
/// other than the configured one keep their defaults; the parser rejects them when written.
struct searcher_config {
  /// single, random, grid, async_halving, adaptive_asha, asha, pbt, tpe or custom.
  std::string name;
  std::string metric;
  bool smaller_is_better = true;
  /// Warm start: every trial starts from this trial's latest checkpoint, or this checkpoint.
  std::optional<int64_t> source_trial_id;
  std::string source_checkpoint_uuid;
  /// det's own key: the trials resume from that checkpoint, its steps included, rather than start
  /// from its weights at step 0 (det trial continue writes it).
  bool source_resumes = false;
  /// Determined 0.38 deprecates it; a bare integer (Determined's unitless length) counts batches.
  std::optional<length> max_length;
  /// With `max_time`, the training length for searchers that read it from reported metrics
  /// (Determined 0.38); det trains by length, so this is "batches", "records" or "epochs".
  std::string time_metric;
  std::optional<int64_t> max_time;
  /// custom: the unit of the lengths its client asks for.
  length_unit unit = length_unit::batches;
  int64_t max_trials = 0;
  /// 0 means no limit.
  int64_t max_concurrent_trials = 16;

  // -- async_halving, adaptive_asha ----------------------------------------------------------
  int64_t num_rungs = 0;
  double divisor = 4;
  int64_t max_rungs = 5;
  /// standard, aggressive or conservative.
  std::string mode = "standard";
  std::vector<int64_t> bracket_rungs;

  // -- tpe (Optuna's defaults) -----------------------------------------------------------------
  int64_t n_startup_trials = 10;
  int64_t n_ei_candidates = 24;
  double gamma = 0.1;

  // -- pbt (Determined 0.17) ---------------------------------------------------------------------
  int64_t population_size = 0;
  int64_t num_rounds = 0;
  std::optional<length> length_per_round;
  double truncate_fraction = 0;
  double resample_probability = 0;
  double perturb_factor = 0;

  /// How far one trial trains at most: `max_length`, else `max_time` in the unit `time_metric`
  /// names; nullopt when neither is set.
  std::optional<length> training_length() const;
  /// A single, random or grid search without a length (Determined 0.38): each trial's process
  /// trains until it exits, and reports its progress itself.
  bool trains_until_exit() const;
};

/// `[resources]`.
struct resources_config {
  int slots_per_trial = 1;
  std::string resource_pool;
  /// 1 (first) to 99; nullopt leaves the pool's default.
  std::optional<int> priority;
  double weight = 1;
  std::optional<int> max_slots;
};

/// `[checkpoint_storage]`. det stores checkpoints on a file system: `shared_fs` (host_path plus
/// storage_path) or `directory` (its `container_path` is read into host_path, since det runs
/// trials outside containers).
struct checkpoint_storage_config {
  std::string type = "shared_fs";
  /// Empty: the master picks a directory under its data directory.
  std::string host_path;
  std::string storage_path;
  int save_experiment_best = 0;
  int save_trial_best = 1;
  int save_trial_latest = 1;

  /// Where the experiment's checkpoints go: host_path (else `default_root`, the master's) and
  /// storage_path below it.
  std::string root(const std::string& default_root) const {
    std::string out = host_path.empty() ? default_root : host_path;
    return storage_path.empty() ? out : out + "/" + storage_path;
  }
  /// Where a trial's TensorBoard event files go, under root().
  std::string tensorboard_dir(const std::string& default_root, int64_t experiment_id, int64_t trial_id) const;
};

/// Where a trial's TensorBoard event files go under a checkpoint root (Determined's layout): its
/// workers write them there and `det tensorboard` reads them.
inline std::string tensorboard_subdir(int64_t experiment_id, int64_t trial_id) {
  return "tensorboard/experiment/" + std::to_string(experiment_id) + "/trial/" + std::to_string(trial_id);
}
/// The same beneath `checkpoint_root`.
inline std::string tensorboard_dir_under(const std::string& checkpoint_root, int64_t experiment_id, int64_t trial_id) {
  return checkpoint_root + "/" + tensorboard_subdir(experiment_id, trial_id);
}

inline std::string checkpoint_storage_config::tensorboard_dir(const std::string& default_root, int64_t experiment_id,
                                                              int64_t trial_id) const {
  return tensorboard_dir_under(root(default_root), experiment_id, trial_id);
}

/// An experiment configuration: Determined's (determined-reference §4) written in TOML.
struct experiment_config {
  std::string name;
  std::string description;
  /// The experiment's labels when it is created.
  std::vector<std::string> labels;
  /// The project `det submit` puts it in when not given --project (workspace "" is Uncategorized).
  std::string workspace;
  std::string project;
  /// `builtin:NAME`, `plugin:LIB.so:CLASS` or a command; a TOML string becomes one element.
  std::vector<std::string> entrypoint;
  /// builtin:NAME or plugin:LIBRARY:CLASS: det's harness trains it (on several agents if its slots
  /// need them); anything else is a process det starts: a Core API command, or a legacy trial class.
  bool harness_entrypoint() const;
  /// Determined's legacy `model_def:TrialClass` (one string matching
  /// ^[a-zA-Z0-9_.]+:[a-zA-Z0-9_]+$, neither builtin: nor plugin:): Determined's harness,
  /// python3 -m determined.exec.harness, trains the class for the searcher's length.
  bool legacy_trial_class_entrypoint() const;
  /// The command a trial's process runs: the entrypoint, or for a legacy trial class what
  /// Determined's harness runs, one process per slot:
  ///   python3 -m determined.launch.torch_distributed -- python3 -m determined.exec.harness model_def:TrialClass
  /// (`python3` as the trial's PATH finds it, as in Determined's containers; an experiment picks
  /// another with environment_variables PATH=...).
  std::vector<std::string> process_command() const;
  /// The entrypoint is a command: its process decides how long it trains, so single, random and
  /// grid searches need no length (Determined 0.38).
  bool process_decides_length() const;
  /// builtin:mlp, builtin:cnn, builtin:gpt or a plugin: the harness trains it with LibTorch.
  bool trains_with_libtorch() const;
  hyperparameters hparams;
  searcher_config searcher;
  resources_config resources;
  /// `[environment]`, `[[bind_mounts]]` and the limits of `[resources]`.
  environment_config environment;
  std::optional<length> min_validation_period;
  std::optional<length> min_checkpoint_period;
  checkpoint_storage_config checkpoint_storage;
  int max_restarts = 5;
  /// Seconds a preempted trial has to checkpoint and exit before it is killed.
  int64_t preemption_timeout_s = 3600;
  int64_t records_per_epoch = 0;
  int scheduling_unit = 100;
  /// `[profiling] enabled`: the worker samples system metrics every second and the harness
  /// times its steps; both are reported as the metric groups "system" and "timings".
  bool profiling_enabled = false;
  /// `[optimizations]`: Determined's mixed_precision ("O0" off, "O1".."O3" on) and det's
  /// gradient_clip_norm (0: no clipping), which trials read from their context; det's
  /// cuda_graph: a trial on a GPU captures its training step once and replays it.
  std::string mixed_precision = "O0";
  double gradient_clip_norm = 0;
  bool cuda_graph = false;
  /// The `[data]` table as JSON object text, handed to training code unchanged.
  std::string data_json = "{}";
  /// `reproducibility.experiment_seed`; the parse time (Unix seconds) when not given.
  uint32_t experiment_seed = 0;
  bool experiment_seed_given = false;

  /// `hyperparameters.global_batch_size` when it is a constant positive integer.
  std::optional<int64_t> global_batch_size() const;
  /// `l` in batches, rounded up (training reaches a records or epochs length only at the end of
  /// a whole batch); 0 when it cannot be known without running.
  int64_t batches_in(const length& l) const;
  /// Max training length in batches when it can be known without running (from
  /// `searcher.training_length()`); 0 if unknown.
  int64_t target_batches() const;
};

/// Parses and validates an experiment config. `source_path` only names the file in errors.
/// Throws config_error listing every problem found.
experiment_config parse_experiment_config(std::string_view toml_text, std::string_view source_path);

/// The text of the config file at `path` as it is, TOML or YAML; throws config_error naming the
/// path when it cannot be read.
std::string read_experiment_config_file(const std::string& path);

/// Reads and parses the file at `path`; an unreadable file is a config_error naming the path.
experiment_config load_experiment_config(const std::string& path);

} // namespace det::config
