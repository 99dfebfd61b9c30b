#include "gpu/builtin_trials.hpp"

#include "gpu/checkpoint_files.hpp"
#include "gpu/mlp_model.hpp"
#include "gpu/trial_settings.hpp"

#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace det::harness {
namespace {

using clock_type = std::chrono::steady_clock;

int64_t total_batches(const training_plan& plan, int64_t batch_size, int64_t records_per_epoch) {
  if (plan.length <= 0)
    throw std::runtime_error("The trial's length must be positive, not " + std::to_string(plan.length) + ".");
  auto batches_for_records = [&](int64_t records) { return (records + batch_size - 1) / batch_size; };
  switch (plan.length_unit) {
    case unit::batches: return plan.length;
    case unit::records: return batches_for_records(plan.length);
    case unit::epochs: return batches_for_records(plan.length * records_per_epoch);
  }
  throw std::logic_error("unhandled length unit");
}

// Accumulates one reporting period; validation time is left out so samples/s measures training only.
class training_period {
 public:
  void resume() { resumed_ = clock_type::now(); }
  void pause() { seconds_ += std::chrono::duration<double>(clock_type::now() - resumed_).count(); }
  void add(double loss, int64_t records) {
    loss_sum_ += loss;
    ++batches_;
    records_ += records;
  }
  int64_t batches() const { return batches_; }
  std::map<std::string, double> close() {
    pause();
    std::map<std::string, double> metrics{{"loss", loss_sum_ / batches_},
                                          {"samples_per_second", seconds_ > 0 ? records_ / seconds_ : 0}};
    *this = training_period{};
    resume();
    return metrics;
  }

 private:
  clock_type::time_point resumed_ = clock_type::now();
  double seconds_ = 0;
  double loss_sum_ = 0;
  int64_t batches_ = 0;
  int64_t records_ = 0;
};

}  // namespace

void run_mlp_trial(const training_plan& plan, reporter& out) {
  const mlp_hparams hparams = [&] {
    try {
      return parse_mlp_hparams(plan.hparams_json);
    } catch (const std::runtime_error& e) {
      throw invalid_hyperparameters(e.what());
    }
  }();
  const data_settings data_spec = parse_data_settings(plan.data_json);
  if (plan.threads > 0) at::set_num_threads(plan.threads);

  auto data = load_trial_data(data_spec);
  out.log("Loaded " + data->description + ".");
  const int64_t batch_size = hparams.global_batch_size;
  const int64_t records_per_epoch = plan.records_per_epoch > 0 ? plan.records_per_epoch : data->train.size();
  const int64_t batch_goal = total_batches(plan, batch_size, records_per_epoch);

  // A CUDA build of LibTorch trains on the GPU the agent exposed; Debian's CPU build never does.
  const torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  const labelled_set validation = data->validation.first(data_spec.validation_limit).to(device);
  torch::manual_seed(plan.seed);
  mlp model(hparams.hidden_sizes, hparams.dropout);
  model->to(device);
  auto optimizer = make_optimizer(hparams, model);
  batch_stream batches(data->train.to(device), batch_size, plan.seed);
  progress at;
  if (!plan.resume_from.empty()) {
    at = load_mlp_checkpoint(plan.resume_from, true, model, *optimizer, batches);
    out.log("Resuming from checkpoint " + plan.resume_from + " at batch " + std::to_string(at.batches) + ".");
  } else if (!plan.warm_start_from.empty()) {
    load_mlp_checkpoint(plan.warm_start_from, false, model, *optimizer, batches);
    out.log("Starting from the weights of checkpoint " + plan.warm_start_from + ".");
  }

  std::ostringstream intro;
  intro << "Training builtin:mlp " << describe_layers(hparams.hidden_sizes) << " with "
        << (hparams.optimizer == optimizer_kind::adam ? "Adam" : "SGD") << " (learning rate "
        << hparams.learning_rate << ", batch " << batch_size << ") for " << batch_goal << " batches on "
        << device.str() << " with " << at::get_num_threads() << " thread(s).";
  out.log(intro.str());

  int64_t validated_at = -1;
  int64_t checkpointed_at = plan.resume_from.empty() ? -1 : at.batches;
  auto checkpoint = [&] {
    if (plan.checkpoint_dir.empty() || checkpointed_at == at.batches) return;
    out.checkpoint_saved(save_mlp_checkpoint(plan.checkpoint_dir, at, model, *optimizer, batches));
    checkpointed_at = at.batches;
  };
  auto validate = [&] {
    evaluation result = evaluate(model, validation);
    out.validation_metrics(at, {{"validation_loss", result.loss}, {"validation_accuracy", result.accuracy}});
    validated_at = at.batches;
  };

  bool stopped = false;
  training_period period;
  while (at.batches < batch_goal) {
    if (out.should_stop()) {
      stopped = true;
      break;
    }
    auto [inputs, labels] = batches.next();
    period.add(train_step(model, *optimizer, inputs, labels).item<double>(), batch_size);
    ++at.batches;
    at.records += batch_size;
    at.epochs = static_cast<double>(at.records) / records_per_epoch;

    if (plan.report_every_batches > 0 && period.batches() == plan.report_every_batches)
      out.training_metrics(at, period.close());
    if (plan.min_validation_period_batches > 0 && at.batches % plan.min_validation_period_batches == 0) {
      period.pause();
      validate();
      period.resume();
    }
    if (plan.min_checkpoint_period_batches > 0 && at.batches % plan.min_checkpoint_period_batches == 0) {
      period.pause();
      checkpoint();
      period.resume();
    }
  }
  if (period.batches() > 0) out.training_metrics(at, period.close());
  if (stopped) {
    out.log("Stopped after " + std::to_string(at.batches) + " of " + std::to_string(batch_goal) +
            " batches as requested.");
    checkpoint();
    return;
  }
  if (validated_at != at.batches) validate();
  checkpoint();
}

}  // namespace det::harness

// The entry point libdet_torch_trials.so exports for the worker's loader.
extern "C" void det_run_mlp_trial(const det::harness::training_plan& plan,
                                  det::harness::reporter& out) {
  det::harness::run_mlp_trial(plan, out);
}
