#pragma once
// det's Trial API: what a user's trial library implements. The harness owns the loop: it asks for
// training batches and validations as the searcher's lengths and the config's periods say,
// averages and reports the metrics, checkpoints, resumes, and stops the trial gracefully.
//
// A trial is a class derived from det::trial, built from a det::trial_context, exported with
// DET_TRIAL(ClassName), compiled into a shared library and named in the experiment config as
//   entrypoint = "plugin:path/in/model/dir/libmytrial.so:ClassName"
// The library may use LibTorch or anything else; this header needs only the standard library.

#include <any>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace det {

/// Metric name -> value, e.g. {"loss", 0.3}.
using metrics = std::map<std::string, double>;

/// Throw from the constructor (or anywhere) when the hyperparameters cannot work: the searcher
/// replaces the trial instead of counting it.
struct invalid_hyperparameters : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a trial is built from; det implements it, and it outlives the trial.
class trial_context {
 public:
  virtual ~trial_context() = default;
  /// Every hyperparameter, as a JSON object.
  virtual const std::string& hparams_json() const = 0;
  /// A top-level numeric (or boolean) hyperparameter; throws invalid_hyperparameters if it is
  /// missing or not a number.
  virtual double hparam(const std::string& name) const = 0;
  /// A top-level hyperparameter as text (strings unquoted, anything else as JSON).
  virtual std::string hparam_text(const std::string& name) const = 0;
  /// The experiment config's [data] table, as a JSON object.
  virtual const std::string& data_json() const = 0;
  /// Seeds the trial's randomness; the same seed must give the same training.
  virtual uint64_t seed() const = 0;
  /// [optimizations]: "O0" (float32) or "O1".."O3" (mixed precision where the device allows; a
  /// trial that cannot should say so with log()), and the norm to clip gradients to (0: none).
  virtual const std::string& mixed_precision() const = 0;
  virtual double gradient_clip_norm() const = 0;
  /// [optimizations] cuda_graph: capture a training step of fixed-shape batches as one CUDA graph
  /// and replay it, where the trial and the device can (a trial that cannot says so with log()).
  virtual bool cuda_graph() const = 0;
  /// This process's place among the trial's processes. A trial on GPU slots trains as one process
  /// per slot, and one whose CPU slots span several agents as one process per agent (world_size()
  /// of them, rank() 0 the chief): every process
  /// gets the same batches from the harness and trains on its share of each (share rank() of
  /// world_size() equal parts). The processes start from the chief's weights (broadcast()) and
  /// average their gradients (average()) between the backward pass and the optimizer step, so
  /// that their models stay the same; det/torch_data_parallel.hpp does both for LibTorch. Only the
  /// chief's metrics and checkpoints are reported: training metrics are averaged over the
  /// processes, and validation batches are shared out among them.
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// A line for the trial's logs.
  virtual void log(const std::string& line) = 0;
  /// Profiling: seconds spent in a step of the trial's own making (e.g. "dataloader_next"),
  /// reported as its mean per period in the metric group "timings". A no-op unless the
  /// experiment enables profiling.
  virtual void record_timing(const std::string& name, double seconds) = 0;
  /// Replaces `values` with their element-wise mean over the trial's processes (nothing changes in
  /// a process alone). Every process must call it at the same point with the same count. On GPU
  /// slots (NCCL) `values` may be host memory or the process's CUDA device memory, averaged in
  /// place there; on CPU slots they are host memory.
  virtual void average(float* values, std::size_t count) = 0;
  /// Replaces `values` with the chief's (e.g. the initial weights, so that every process starts
  /// from the same model). Every process must call it at the same point with the same count;
  /// on GPU slots, too, in host or device memory.
  virtual void broadcast(float* values, std::size_t count) = 0;
};

/// One batch as a data loader made it (tensors, a struct: anything copyable). The harness hands
/// it on to train_batch or evaluate_batch without looking inside; take it with std::any_cast.
using batch = std::any;

/// A data set the harness draws batches from. The harness asks by position, so the same position
/// must always give the same batch (shuffle with a generator seeded from the trial's seed and the
/// epoch): a resumed trial then continues with exactly the batch it would have trained next, and
/// the loader has no state a checkpoint must hold.
class data_loader {
 public:
  virtual ~data_loader() = default;
  /// Batches in one pass over the data; at least 1.
  virtual int64_t batches_per_epoch() const = 0;
  /// Batch `index` (0 to batches_per_epoch() - 1) of pass `epoch` (from 0).
  virtual batch get(int64_t epoch, int64_t index) = 0;
};

/// A user's trial. One instance trains one run of one trial.
class trial {
 public:
  virtual ~trial() = default;
  /// Records in one batch (the global batch size): the harness counts records and epochs with it.
  virtual int64_t batch_size() const = 0;
  /// Records in one epoch of the training data; 0 (the default) means batches_per_epoch() of the
  /// training loader times batch_size(). The config's records_per_epoch overrides both.
  virtual int64_t records_per_epoch() const { return 0; }
  /// The training data, built once per run. Without one (nullptr, the default) the trial draws its
  /// own batches in train_batch, which then gets an empty batch.
  virtual std::unique_ptr<data_loader> build_training_data_loader() { return nullptr; }
  /// The validation data: each validation passes over all of it through evaluate_batch. Without
  /// one (nullptr, the default) each validation calls evaluate_full instead.
  virtual std::unique_ptr<data_loader> build_validation_data_loader() { return nullptr; }
  /// One optimisation step on `b`, the training loader's next batch. `epoch_idx` is the pass over
  /// the training data and `batch_idx` counts batches from 0 across the trial's whole training.
  /// The metrics (e.g. "loss") are averaged over each reporting period. A trial on a GPU should
  /// return none and keep its metrics on the device instead (take_training_metrics): a value
  /// returned here is read from the device at every batch, which makes the host wait for the GPU.
  virtual metrics train_batch(batch& b, int64_t epoch_idx, int64_t batch_idx) = 0;
  /// Optional: training metrics the trial reduces itself, each one's mean over the batches since
  /// the last call (det/torch_metrics.hpp's metric_sums keeps them on the device and reads them
  /// in one copy). The harness calls it once per reporting period and reports these beside the
  /// means of what train_batch returned; a name in both is taken from here.
  virtual metrics take_training_metrics() { return {}; }
  /// Optional: waits for the work the trial has queued on its device (a GPU's stream). The harness
  /// calls it before it stops the training clock for a validation or a checkpoint, so that
  /// samples_per_second counts the batches' time on the device, not only their queueing.
  virtual void synchronize() {}
  /// The metrics of one validation batch; a validation reports each metric's mean over the
  /// validation loader's batches, and the searcher reads its metric from those.
  virtual metrics evaluate_batch(batch& b) {
    (void)b;
    throw std::logic_error("The trial has a validation data loader but does not implement evaluate_batch.");
  }
  /// A whole validation at once, for a trial without a validation data loader.
  virtual metrics evaluate_full() {
    throw std::logic_error("The trial has no validation data loader and does not implement evaluate_full.");
  }
  /// Optional: called with each validation's metrics once they are reported (e.g. to adjust an
  /// LR schedule); `batches_trained` is how many batches the trial has trained.
  virtual void on_validation_end(int64_t batches_trained, const metrics& validation) {
    (void)batches_trained;
    (void)validation;
  }
  /// Writes into `dir` everything an exact resume needs: model, optimizer, LR scheduler and
  /// random generators (and the position in the data, for a trial without a training loader:
  /// the harness keeps a loader's).
  virtual void save(const std::string& dir) = 0;
  /// Reads what save() wrote. `weights_only` (a warm start): the model and optimizer only,
  /// since the new trial's training starts from batch 0.
  virtual void load(const std::string& dir, bool weights_only) = 0;
};

/// The factory signature DET_TRIAL exports.
using trial_factory = trial* (*)(trial_context&);

/// The signature of the version function DET_TRIAL exports beside each factory.
using trial_api_version_function = int (*)();

} // namespace det

/// The version of this Trial API. DET_TRIAL compiles it into the plugin, and the worker refuses a
/// plugin built against another version: det and the plugin would disagree on the classes they
/// share, and calls across them would land in the wrong functions. Bump it with any change to the
/// layout or the virtual functions of trial_context, data_loader or trial, or to the types they
/// pass (metrics, batch, invalid_hyperparameters, trial_factory). Version 2 added
/// trial::take_training_metrics, trial::synchronize and trial_context::cuda_graph.
#define DET_TRIAL_API_VERSION 2

/// Exports ClassName, which must be constructible from det::trial_context&, to the harness, with
/// the Trial API version it was built against. Both functions are named after the class, so that
/// one library (and one source file) may export several trials.
#define DET_TRIAL(ClassName)                                                                     \
  extern "C" int det_trial_api_version_##ClassName() { return DET_TRIAL_API_VERSION; }          \
  extern "C" det::trial* det_make_trial_##ClassName(det::trial_context& context) { return new ClassName(context); }
