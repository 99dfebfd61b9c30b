// builtin:gpt as a det::trial: a GPT-2-style decoder (gpu/gpt_model.hpp) trained on the fortunes
// corpus or synthetic tokens (gpu/token_data.hpp) with AdamW, a warm-up and a cosine decay, as
// nanoGPT trains. The same Trial API and loop as builtin:mlp (gpu/harness.cpp).
//
// Its training metrics stay on the device (det::metric_sums): train_batch returns none, and each
// reporting period reads the mean loss in one copy, with tokens_per_second over the period and,
// on a GPU, mfu (model FLOPs utilisation: the model's FLOPs per second over the GPU's bf16 peak).

#include "det/torch_metrics.hpp"
#include "det/trial.hpp"
#include "gpu/devices.hpp"
#include "gpu/fused_adam.hpp"
#include "gpu/gpt_model.hpp"
#include "gpu/gpt_settings.hpp"
#include "gpu/mixed_precision.hpp"
#include "gpu/mlp_model.hpp"
#include "gpu/token_data.hpp"

#include <chrono>
#include <iomanip>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace det::harness {
namespace {

using clock_type = std::chrono::steady_clock;

// nanoGPT's AdamW betas for GPT pretraining.
constexpr double adam_beta1 = 0.9;
constexpr double adam_beta2 = 0.95;

gpt_hparams parse_hparams(const std::string& json) {
  try {
    return parse_gpt_hparams(json);
  } catch (const std::runtime_error& e) {
    throw det::invalid_hyperparameters(e.what());
  }
}

// Seeded before it is built: the seed decides the initial weights (built on the CPU, so that a
// seed gives the same model on any device).
gpt_model seeded_model(const gpt_hparams& hparams, uint64_t seed, const torch::Device& device) {
  torch::manual_seed(seed);
  gpt_model model(hparams);
  model->to(device);
  return model;
}

// AdamW over two groups, as nanoGPT's configure_optimizers: weight decay on the weight matrices
// and embeddings, none on biases and LayerNorm gains.
std::unique_ptr<fused_adamw> make_adamw(const gpt_hparams& h, gpt_model& model) {
  auto [decayed, not_decayed] = model->decay_groups();
  auto options = torch::optim::AdamWOptions(h.learning_rate).betas({adam_beta1, adam_beta2});
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed, std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(h.weight_decay)));
  groups.emplace_back(not_decayed, std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(0)));
  return std::make_unique<fused_adamw>(std::move(groups), options);
}

std::string millions(int64_t count) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << static_cast<double>(count) / 1e6 << "M";
  return text.str();
}

class gpt_trial final : public det::trial {
 public:
  explicit gpt_trial(det::trial_context& context)
      : context_(context),
        hparams_(parse_hparams(context.hparams_json())),
        data_spec_(parse_token_data_settings(context.data_json())),
        corpus_(load_token_corpus(data_spec_, hparams_.vocab_size)),
        // A CUDA build of LibTorch trains on the GPU the agent exposed; Debian's CPU build never does.
        device_(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU),
        model_(seeded_model(hparams_, context.seed(), device_)),
        optimizer_(make_adamw(hparams_, model_)),
        mixed_precision_(context.mixed_precision() != "O0" && device_.is_cuda()),
        clip_norm_(context.gradient_clip_norm()),
        flops_per_token_(gpt_flops_per_token(hparams_, model_->parameters_without_positions())) {
    if (hparams_.global_batch_size < context.world_size())
      throw det::invalid_hyperparameters("global_batch_size " + std::to_string(hparams_.global_batch_size) +
                                         " is smaller than the trial's " + std::to_string(context.world_size()) +
                                         " processes: each needs a share of every batch.");
    context.log("Loaded " + corpus_->description + ".");
    std::ostringstream intro;
    intro << "Training builtin:gpt (" << hparams_.n_layer << " layers, " << hparams_.n_head << " heads, "
          << hparams_.n_embd << "-wide embeddings, " << hparams_.block_size << "-token context, vocabulary of "
          << hparams_.vocab_size << ": " << millions(model_->parameters_without_positions())
          << " parameters besides the position embeddings) with AdamW (learning rate " << hparams_.learning_rate
          << " after " << hparams_.warmup_batches << " warm-up batches, cosine decay to " << hparams_.min_learning_rate
          << " at batch " << hparams_.lr_decay_batches << ", weight decay " << hparams_.weight_decay << ", batch "
          << hparams_.global_batch_size << " windows) on " << device_.str() << " with " << at::get_num_threads()
          << " thread(s).";
    context.log(intro.str());
    det::broadcast_parameters(context, model_->parameters());
    if (context.world_size() > 1) {
      averager_ = std::make_unique<det::gradient_averager>(context, model_->parameters());
      context.log("Process " + std::to_string(context.rank()) + " of " + std::to_string(context.world_size()) +
                  ": training on its share of each batch, gradients averaged over all.");
    }
    if (clip_norm_ > 0) context.log("Clipping gradients to a total norm of " + std::to_string(clip_norm_) + ".");
    if (mixed_precision_)
      context.log("optimizations.mixed_precision = " + context.mixed_precision() +
                  ": the forward passes run under autocast to bfloat16.");
    else if (context.mixed_precision() != "O0")
      context.log("optimizations.mixed_precision = " + context.mixed_precision() +
                  " is not applied: autocast needs a GPU, so it trains in float32 on " + device_.str() + ".");
    if (context.cuda_graph())
      context.log("optimizations.cuda_graph is not applied by builtin:gpt: its learning rate changes at every "
                  "batch, which a captured step would not see.");
    if (device_.is_cuda()) {
      describe_peak();
      describe_attention(context);
    }
  }

  int64_t batch_size() const override { return hparams_.global_batch_size; }

  std::unique_ptr<det::data_loader> build_training_data_loader() override {
    // The tokens move to the device once; each process gathers only its share of every batch.
    return std::make_unique<training_loader>(token_windows(corpus_->train.to(device_), hparams_.block_size,
                                                           hparams_.global_batch_size, context_.seed(),
                                                           {context_.rank(), context_.world_size()}));
  }
  std::unique_ptr<det::data_loader> build_validation_data_loader() override {
    return std::make_unique<validation_loader>(fixed_windows(corpus_->validation.to(device_), hparams_.block_size,
                                                             hparams_.global_batch_size,
                                                             data_spec_.validation_batches));
  }

  // Each phase timed for profiling (record_timing is a no-op unless the experiment profiles; on a
  // GPU a phase's time is mostly that of queueing its kernels).
  det::metrics train_batch(det::batch& b, int64_t, int64_t batch_idx) override {
    auto last = clock_type::now();
    if (period_tokens_ == 0) period_start_ = last;
    auto lap = [&](const char* phase) {
      auto now = clock_type::now();
      context_.record_timing(phase, std::chrono::duration<double>(now - last).count());
      last = now;
    };
    auto& [inputs, targets] = std::any_cast<token_batch&>(b);  // on the device, this process's share
    set_learning_rate(gpt_learning_rate(hparams_, batch_idx));
    optimizer_->zero_grad();
    torch::Tensor loss;
    {
      cuda_autocast autocast(mixed_precision_);  // forward only: backward runs in the forward's types
      loss = model_->loss(inputs, targets);
    }
    lap("forward");
    if (averager_) averager_->prepare();
    loss.backward();  // with an averager, buckets of gradients are averaged while it runs
    if (averager_) averager_->synchronize();
    if (clip_norm_ > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), clip_norm_);
    lap("backward");
    optimizer_->step();
    lap("optimizer_step");
    sums_.add("loss", loss.detach());
    sums_.end_batch();
    // Every process counts the whole batch: the harness averages the processes' metrics.
    period_tokens_ += hparams_.global_batch_size * hparams_.block_size;
    return {};
  }

  void synchronize() override {
    if (device_.is_cuda()) torch::cuda::synchronize();
  }

  det::metrics take_training_metrics() override {
    auto metrics = sums_.take();  // its one copy waits for the device: the period's batches are done
    const auto now = clock_type::now();
    if (period_tokens_ > 0) {
      const double seconds = std::chrono::duration<double>(now - period_start_).count();
      const double tokens_per_second = seconds > 0 ? static_cast<double>(period_tokens_) / seconds : 0;
      metrics["tokens_per_second"] = tokens_per_second;
      if (peak_flops_ > 0)
        metrics["mfu"] = flops_per_token_ * tokens_per_second / (peak_flops_ * context_.world_size());
      metrics["learning_rate"] = learning_rate_;
    }
    period_tokens_ = 0;
    return metrics;
  }

  det::metrics evaluate_batch(det::batch& b) override {
    auto& [inputs, targets] = std::any_cast<token_batch&>(b);
    torch::NoGradGuard no_grad;
    model_->eval();
    torch::Tensor loss;
    {
      cuda_autocast autocast(mixed_precision_);
      loss = model_->loss(inputs, targets);
    }
    model_->train();
    return {{"validation_loss", loss.item<double>()}};
  }

  void save(const std::string& dir) override { save_trial_state(dir, *model_, *optimizer_); }
  void load(const std::string& dir, bool weights_only) override {
    load_trial_state(dir, weights_only, *model_, *optimizer_);
  }

 private:
  struct training_loader final : det::data_loader {
    explicit training_loader(token_windows windows) : windows(std::move(windows)) {}
    int64_t batches_per_epoch() const override { return windows.batches_per_epoch(); }
    det::batch get(int64_t epoch, int64_t index) override { return windows.get(epoch, index); }
    token_windows windows;
  };
  struct validation_loader final : det::data_loader {
    explicit validation_loader(fixed_windows windows) : windows(std::move(windows)) {}
    int64_t batches_per_epoch() const override { return windows.batches(); }
    det::batch get(int64_t, int64_t index) override { return windows.get(index); }
    fixed_windows windows;
  };

  // The learning rate is a host value in each group's options, read by every step.
  void set_learning_rate(double rate) {
    learning_rate_ = rate;
    for (auto& group : optimizer_->param_groups())
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(rate);
  }

  // The peak that mfu divides by: the hyperparameter, the data setting, or the device's from the table.
  // Which of ATen's attention kernels the model's shapes get (flash attention is what makes a GPT
  // fast; the math path materialises every head's T x T scores), for the trial's log.
  void describe_attention(det::trial_context& context) {
#if TORCH_VERSION_MAJOR >= 2 && !DET_NO_FUSED_ADAM
    const int64_t head_dim = hparams_.n_embd / hparams_.n_head;
    auto options = torch::TensorOptions().device(device_).dtype(mixed_precision_ ? torch::kBFloat16 : torch::kFloat);
    auto q = torch::zeros({1, hparams_.n_head, hparams_.block_size, head_dim}, options);
    static const char* const names[] = {"the math path", "flash attention", "memory-efficient attention",
                                        "cuDNN attention"};
    const int64_t choice = at::_fused_sdp_choice(q, q, q, {}, 0.0, /*is_causal=*/true);
    context.log(std::string("Attention runs as ") +
                (choice >= 0 && choice < 4 ? names[choice] : ("ATen's kernel " + std::to_string(choice)).c_str()) +
                " for these shapes.");
#else
    (void)context;
#endif
  }

  void describe_peak() {
    // The driver numbers the visible devices as LibTorch does (both honour CUDA_VISIBLE_DEVICES).
    const auto devices = det::gpu::discover_cuda_devices();
    const std::size_t ordinal = device_.has_index() ? static_cast<std::size_t>(device_.index()) : 0;
    const std::string name = ordinal < devices.size() ? devices[ordinal].name : std::string();
    if (hparams_.peak_tflops > 0)
      peak_flops_ = hparams_.peak_tflops * 1e12;
    else if (data_spec_.peak_tflops > 0)
      peak_flops_ = data_spec_.peak_tflops * 1e12;
    else
      peak_flops_ = peak_bf16_flops(name);
    std::ostringstream line;
    if (peak_flops_ > 0)
      line << "mfu is reported against a peak of " << peak_flops_ / 1e12 << " TFLOP/s (" << (name.empty() ? "the GPU" : name)
           << "), at " << std::setprecision(4) << flops_per_token_ / 1e9 << " GFLOP per token.";
    else
      line << "mfu is not reported: the bfloat16 peak of " << (name.empty() ? "this GPU" : name)
           << " is unknown; set the hyperparameter or data setting 'peak_tflops'.";
    context_.log(line.str());
  }

  det::trial_context& context_;
  gpt_hparams hparams_;
  token_data_settings data_spec_;
  std::shared_ptr<const token_corpus> corpus_;
  torch::Device device_;
  gpt_model model_;
  std::unique_ptr<fused_adamw> optimizer_;
  std::unique_ptr<det::gradient_averager> averager_;  // a distributed run's; its hooks are on model_
  bool mixed_precision_;
  double clip_norm_;
  double flops_per_token_;
  double peak_flops_ = 0;  // FLOP/s; 0: no mfu (a CPU, or a GPU of unknown peak)
  det::metric_sums sums_;
  double learning_rate_ = 0;        // the last batch's
  int64_t period_tokens_ = 0;       // trained since the last take_training_metrics
  clock_type::time_point period_start_;  // of the period's first batch
};

}  // namespace
}  // namespace det::harness

// Exported as builtin:mlp and builtin:cnn are (gpu/harness.cpp): the worker finds the factory in
// libdet_torch_trials.so.
using gpt = det::harness::gpt_trial;
DET_TRIAL(gpt)
