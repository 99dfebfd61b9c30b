// builtin:mlp and builtin:cnn as det::trial classes: the same Trial API as users' plugins,
// driven by the same loop.

#include "det/trial.hpp"
#include "gpu/mlp_model.hpp"
#include "gpu/trial_settings.hpp"

#include <chrono>
#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace det::harness {
namespace {

/// One optimisation step on the next batch, each phase timed for profiling (record_timing is a
/// no-op unless the experiment profiles; on a GPU the phases' times include waiting for kernels
/// queued earlier). Clips the gradients' total norm to `clip_norm` when it is positive.
template <class Model>
det::metrics timed_train_step(det::trial_context& context, Model& model, torch::optim::Optimizer& optimizer,
                              batch_stream& batches, double clip_norm) {
  using clock_type = std::chrono::steady_clock;
  auto last = clock_type::now();
  auto lap = [&](const char* name) {
    auto now = clock_type::now();
    context.record_timing(name, std::chrono::duration<double>(now - last).count());
    last = now;
  };
  auto [inputs, labels] = batches.next();
  lap("dataloader_next");
  optimizer.zero_grad();
  auto loss = torch::nn::functional::cross_entropy(model->forward(inputs), labels);
  lap("forward");
  loss.backward();
  if (clip_norm > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), clip_norm);
  lap("backward");
  optimizer.step();
  lap("optimizer_step");
  return {{"loss", loss.template item<double>()}};
}

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
        optimizer_(make_optimizer(hparams_, model_->parameters())),
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
    return timed_train_step(context_, model_, *optimizer_, batches_, clip_norm_);
  }

  det::metrics evaluate() override {
    auto result = harness::evaluate(model_, validation_);
    return {{"validation_loss", result.loss}, {"validation_accuracy", result.accuracy}};
  }

  void save(const std::string& dir) override { save_trial_state(dir, *model_, *optimizer_, batches_); }
  void load(const std::string& dir, bool weights_only) override {
    load_trial_state(dir, weights_only, *model_, *optimizer_, batches_);
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


/// builtin:cnn: two convolutions (channels, then twice as many; 3x3, ReLU, 2x2 max-pooling) and
/// a linear layer, on the same data and with the same optimiser settings as builtin:mlp.
struct cnn_impl : torch::nn::Module {
  explicit cnn_impl(int64_t channels)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, channels, 3)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 2 * channels, 3)))),
        fc(register_module("fc", torch::nn::Linear(2 * channels * 5 * 5, mlp_classes))) {}
  torch::Tensor forward(const torch::Tensor& flat) {
    auto x = flat.view({-1, 1, 28, 28});
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);  // 26 -> 13
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);  // 11 -> 5
    return fc(x.flatten(1));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc;
};
TORCH_MODULE_IMPL(cnn, cnn_impl);

class cnn_trial final : public det::trial {
 public:
  explicit cnn_trial(det::trial_context& context)
      : context_(context),
        hparams_(parse_hparams(context.hparams_json())),
        channels_(channels_of(context)),
        data_spec_(parse_data_settings(context.data_json())),
        data_(load_trial_data(data_spec_)),
        device_(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU),
        validation_(data_->validation.first(data_spec_.validation_limit).to(device_)),
        model_(seeded_model(channels_, context.seed(), device_)),
        optimizer_(make_optimizer(hparams_, model_->parameters())),
        batches_(data_->train.to(device_), hparams_.global_batch_size, context.seed()),
        clip_norm_(context.gradient_clip_norm()) {
    context.log("Loaded " + data_->description + ".");
    context.log("Training builtin:cnn with " + std::to_string(channels_) + " and " + std::to_string(2 * channels_) +
                " channels (learning rate " + std::to_string(hparams_.learning_rate) + ", batch " +
                std::to_string(hparams_.global_batch_size) + ") on " + device_.str() + ".");
    if (context.mixed_precision() != "O0")
      context.log("optimizations.mixed_precision = " + context.mixed_precision() +
                  " is not applied: builtin:cnn trains in float32 on " + device_.str() + ".");
  }

  int64_t batch_size() const override { return hparams_.global_batch_size; }
  int64_t records_per_epoch() const override { return data_->train.size(); }

  det::metrics train_batch(int64_t) override {
    return timed_train_step(context_, model_, *optimizer_, batches_, clip_norm_);
  }

  det::metrics evaluate() override {
    torch::NoGradGuard no_grad;
    model_->eval();
    double loss_sum = 0, correct = 0;
    const int64_t n = validation_.size();
    for (int64_t start = 0; start < n; start += 1000) {
      auto end = std::min(start + 1000, n);
      auto logits = model_->forward(validation_.inputs.slice(0, start, end));
      auto labels = validation_.labels.slice(0, start, end);
      loss_sum += torch::nn::functional::cross_entropy(
                      logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                      .item<double>();
      correct += logits.argmax(1).eq(labels).sum().item<double>();
    }
    model_->train();
    return {{"validation_loss", loss_sum / static_cast<double>(n)}, {"validation_accuracy", correct / static_cast<double>(n)}};
  }

  void save(const std::string& dir) override { save_trial_state(dir, *model_, *optimizer_, batches_); }
  void load(const std::string& dir, bool weights_only) override {
    load_trial_state(dir, weights_only, *model_, *optimizer_, batches_);
  }

 private:
  static mlp_hparams parse_hparams(const std::string& json) {
    try {
      return parse_mlp_hparams(json);
    } catch (const std::runtime_error& e) {
      throw det::invalid_hyperparameters(e.what());
    }
  }
  static int64_t channels_of(det::trial_context& context) {
    auto hparams = context.hparams_json();
    if (hparams.find("\"channels\"") == std::string::npos) return 16;
    auto channels = context.hparam("channels");
    if (channels < 1 || channels != static_cast<double>(static_cast<int64_t>(channels)))
      throw det::invalid_hyperparameters("The hyperparameter 'channels' must be a positive integer.");
    return static_cast<int64_t>(channels);
  }
  static cnn seeded_model(int64_t channels, uint64_t seed, const torch::Device& device) {
    torch::manual_seed(seed);
    cnn model(channels);
    model->to(device);
    return model;
  }

  det::trial_context& context_;
  mlp_hparams hparams_;
  int64_t channels_;
  data_settings data_spec_;
  std::shared_ptr<const trial_data> data_;
  torch::Device device_;
  labelled_set validation_;
  cnn model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  batch_stream batches_;
  double clip_norm_;
};

}  // namespace
}  // namespace det::harness

// The built-in trials' factories, which the worker finds in libdet_torch_trials.so as a plugin's.
extern "C" det::trial* det_make_trial_mlp(det::trial_context& context) {
  return new det::harness::mlp_trial(context);
}

extern "C" det::trial* det_make_trial_cnn(det::trial_context& context) {
  return new det::harness::cnn_trial(context);
}
