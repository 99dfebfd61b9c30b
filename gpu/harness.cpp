// builtin:mlp as a det::trial: the same Trial API as users' plugins, driven by the same loop.

#include "det/trial.hpp"
#include "gpu/mlp_model.hpp"
#include "gpu/trial_settings.hpp"

#include <chrono>
#include <sstream>
#include <stdexcept>

namespace det::harness {
namespace {

class mlp_trial final : public det::trial {
 public:
  explicit mlp_trial(det::trial_context& context)
      : context_(context),
        hparams_(parse_hparams(context.hparams_json())),
        data_spec_(parse_data_settings(context.data_json())),
        data_(load_trial_data(data_spec_)),
        // A CUDA build of LibTorch trains on the GPU the agent exposed; Debian's CPU build never does.
        device_(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU),
        validation_(data_->validation.first(data_spec_.validation_limit).to(device_)),
        model_(seeded_model(hparams_, context.seed(), device_)),
        optimizer_(make_optimizer(hparams_, model_)),
        batches_(data_->train.to(device_), hparams_.global_batch_size, context.seed()),
        clip_norm_(context.gradient_clip_norm()) {
    context.log("Loaded " + data_->description + ".");
    std::ostringstream intro;
    intro << "Training builtin:mlp " << describe_layers(hparams_.hidden_sizes) << " with "
          << (hparams_.optimizer == optimizer_kind::adam ? "Adam" : "SGD") << " (learning rate "
          << hparams_.learning_rate << ", batch " << hparams_.global_batch_size << ") on " << device_.str()
          << " with " << at::get_num_threads() << " thread(s).";
    context.log(intro.str());
    if (context.gradient_clip_norm() > 0)
      context.log("Clipping gradients to a total norm of " + std::to_string(context.gradient_clip_norm()) + ".");
    if (context.mixed_precision() != "O0")
      context.log("optimizations.mixed_precision = " + context.mixed_precision() +
                  " is not applied: builtin:mlp trains in float32 on " + device_.str() + ".");
  }

  int64_t batch_size() const override { return hparams_.global_batch_size; }
  int64_t records_per_epoch() const override { return data_->train.size(); }

  det::metrics train_batch(int64_t) override {
    auto start = std::chrono::steady_clock::now();
    auto [inputs, labels] = batches_.next();
    context_.record_timing("dataloader_next", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return {{"loss", train_step(model_, *optimizer_, inputs, labels, clip_norm_).item<double>()}};
  }

  det::metrics evaluate() override {
    auto result = harness::evaluate(model_, validation_);
    return {{"validation_loss", result.loss}, {"validation_accuracy", result.accuracy}};
  }

  void save(const std::string& dir) override { save_mlp_state(dir, model_, *optimizer_, batches_); }
  void load(const std::string& dir, bool weights_only) override {
    load_mlp_state(dir, weights_only, model_, *optimizer_, batches_);
  }

 private:
  static mlp_hparams parse_hparams(const std::string& json) {
    try {
      return parse_mlp_hparams(json);
    } catch (const std::runtime_error& e) {
      throw det::invalid_hyperparameters(e.what());
    }
  }
  // Seeded before it is built: the seed decides the initial weights.
  static mlp seeded_model(const mlp_hparams& hparams, uint64_t seed, const torch::Device& device) {
    torch::manual_seed(seed);
    mlp model(hparams.hidden_sizes, hparams.dropout);
    model->to(device);
    return model;
  }

  det::trial_context& context_;
  mlp_hparams hparams_;
  data_settings data_spec_;
  std::shared_ptr<const trial_data> data_;
  torch::Device device_;
  labelled_set validation_;
  mlp model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  batch_stream batches_;
  double clip_norm_;
};

}  // namespace
}  // namespace det::harness

// builtin:mlp's factory, which the worker finds in libdet_torch_trials.so as a plugin's.
extern "C" det::trial* det_make_trial_mlp(det::trial_context& context) {
  return new det::harness::mlp_trial(context);
}
