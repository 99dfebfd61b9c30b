// builtin:mlp and builtin:cnn as det::trial classes: the same Trial API as users' plugins,
// driven by the same loop.

#include "det/torch_metrics.hpp"
#include "det/trial.hpp"
#include "gpu/cuda_step_graph.hpp"
#include "gpu/fused_adam.hpp"
#include "gpu/mlp_model.hpp"
#include "gpu/trial_settings.hpp"

#include <chrono>
#include <sstream>
#include <stdexcept>

namespace det::harness {
namespace {

/// builtin:cnn: two convolutions (channels, then twice as many; 3x3, ReLU, 2x2 max-pooling) and
/// a linear layer.
struct cnn_impl : torch::nn::Module {
  explicit cnn_impl(int64_t channels)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, channels, 3)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 2 * channels, 3)))),
        fc(register_module("fc", torch::nn::Linear(2 * channels * 5 * 5, mlp_classes))) {}
  torch::Tensor forward(const torch::Tensor& flat) {
    // Channels-last where the weights are (bfloat16 on a GPU), the default layout elsewhere.
    auto x = flat.view({-1, 1, 28, 28}).contiguous(conv1->weight.suggest_memory_format());
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);  // 26 -> 13
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);  // 11 -> 5
    return fc(x.flatten(1));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc;
};
TORCH_MODULE_IMPL(cnn, cnn_impl);

mlp make_model(const mlp_hparams& h, mlp*) { return mlp(h.hidden_sizes, h.dropout); }
cnn make_model(const mlp_hparams& h, cnn*) { return cnn(h.channels); }

// Convolution weights in channels-last layout, which cuDNN's bfloat16 kernels run fastest on a
// GPU; the MLP has none.
void use_channels_last(mlp&) {}
void use_channels_last(cnn& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters())
    if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
}

std::string describe_model(const mlp_hparams& h, mlp*) { return "builtin:mlp " + describe_layers(h.hidden_sizes); }
std::string describe_model(const mlp_hparams& h, cnn*) {
  return "builtin:cnn with " + std::to_string(h.channels) + " and " + std::to_string(2 * h.channels) + " channels";
}

mlp_hparams parse_hparams(const std::string& json) {
  try {
    return parse_mlp_hparams(json);
  } catch (const std::runtime_error& e) {
    throw det::invalid_hyperparameters(e.what());
  }
}

/// builtin:mlp and builtin:cnn: a Model on Fashion-MNIST (or synthetic) images, the optimiser the
/// hyperparameters name, initial weights from the seed; checkpoints hold the model, the
/// optimizer, the generators and the data position.
template <class Model>
class image_trial final : public det::trial {
 public:
  explicit image_trial(det::trial_context& context)
      : context_(context),
        hparams_(parse_hparams(context.hparams_json())),
        data_spec_(parse_data_settings(context.data_json())),
        data_(load_trial_data(data_spec_)),
        // A CUDA build of LibTorch trains on the GPU the agent exposed; Debian's CPU build never does.
        device_(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU),
        model_(seeded_model(hparams_, context.seed(), device_)),
        optimizer_(make_optimizer(hparams_, model_->parameters())),
        step_{context.gradient_clip_norm(), context.mixed_precision() != "O0" && device_.is_cuda(), nullptr} {
    context.log("Loaded " + data_->description + ".");
    place_data(context);
    std::ostringstream intro;
    intro << "Training " << describe_model(hparams_, static_cast<Model*>(nullptr)) << " with "
          << (hparams_.optimizer == optimizer_kind::adam ? "Adam" : "SGD") << " (learning rate "
          << hparams_.learning_rate << ", batch " << hparams_.global_batch_size << ") on " << device_.str()
          << " with " << at::get_num_threads() << " thread(s).";
    context.log(intro.str());
    if (hparams_.global_batch_size < context.world_size())
      throw det::invalid_hyperparameters("global_batch_size " + std::to_string(hparams_.global_batch_size) +
                                         " is smaller than the trial's " + std::to_string(context.world_size()) +
                                         " processes: each needs a share of every batch.");
    det::broadcast_parameters(context, model_->parameters());
    if (context.world_size() > 1) {
      averager_ = std::make_unique<det::gradient_averager>(context, model_->parameters());
      step_.averager = averager_.get();
    }
    if (context.world_size() > 1)
      context.log("Process " + std::to_string(context.rank()) + " of " + std::to_string(context.world_size()) +
                  ": training on its share of each batch, gradients averaged over all.");
    if (step_.clip_norm > 0)
      context.log("Clipping gradients to a total norm of " + std::to_string(step_.clip_norm) + ".");
    if (step_.mixed_precision)
      context.log("optimizations.mixed_precision = " + context.mixed_precision() +
                  ": the forward passes run under autocast to bfloat16.");
    else if (context.mixed_precision() != "O0")
      context.log("optimizations.mixed_precision = " + context.mixed_precision() +
                  " is not applied: autocast needs a GPU, so it trains in float32 on " + device_.str() + ".");
    if (context.cuda_graph()) graph_wanted_ = can_capture(context);
  }

  int64_t batch_size() const override { return hparams_.global_batch_size; }
  int64_t records_per_epoch() const override { return data_->train.size(); }

  std::unique_ptr<det::data_loader> build_training_data_loader() override {
    // Each process gathers only its share of every batch.
    return std::make_unique<training_loader>(shuffled_batches(train_set_, hparams_.global_batch_size, context_.seed(),
                                                              {context_.rank(), context_.world_size()}));
  }
  std::unique_ptr<det::data_loader> build_validation_data_loader() override {
    return std::make_unique<validation_loader>(sequential_batches(validation_set_, validation_batch_size));
  }

  // Each phase timed for profiling (record_timing is a no-op unless the experiment profiles; on a
  // GPU a phase's time includes waiting for kernels queued before it).
  det::metrics train_batch(det::batch& b, int64_t, int64_t) override {
    using clock_type = std::chrono::steady_clock;
    auto last = clock_type::now();
    auto lap = [&](const char* phase) {
      auto now = clock_type::now();
      context_.record_timing(phase, std::chrono::duration<double>(now - last).count());
      last = now;
    };
    auto [inputs, labels] = on_device(b);  // this process's share of the batch (the loader's)
    lap("to_device");
    if (graph_wanted_ && inputs.size(0) == hparams_.global_batch_size) {
      replay_step(inputs, labels);
      lap("train_step_graph");
    } else {
      // The loss stays on the device, summed there: no batch waits for the GPU to read it.
      metrics_.add("loss", train_step(model_, *optimizer_, inputs, labels, step_, lap));
    }
    metrics_.end_batch();
    return {};
  }

  det::metrics take_training_metrics() override { return metrics_.take(); }
  void synchronize() override {
    if (device_.is_cuda()) torch::cuda::synchronize();
  }

  det::metrics evaluate_batch(det::batch& b) override {
    auto [inputs, labels] = on_device(b);
    auto result = harness::evaluate_batch(model_, inputs, labels, step_.mixed_precision);
    return {{"validation_loss", result.loss}, {"validation_accuracy", result.accuracy}};
  }

  void save(const std::string& dir) override { save_trial_state(dir, *model_, *optimizer_); }
  void load(const std::string& dir, bool weights_only) override {
    load_trial_state(dir, weights_only, *model_, *optimizer_);
  }

 private:
  using tensor_pair = std::pair<torch::Tensor, torch::Tensor>;
  static constexpr int64_t validation_batch_size = 1000;

  struct training_loader final : det::data_loader {
    explicit training_loader(shuffled_batches batches) : batches(std::move(batches)) {}
    int64_t batches_per_epoch() const override { return batches.batches_per_epoch(); }
    det::batch get(int64_t epoch, int64_t index) override { return batches.get(epoch, index); }
    shuffled_batches batches;
  };
  struct validation_loader final : det::data_loader {
    explicit validation_loader(sequential_batches batches) : batches(std::move(batches)) {}
    int64_t batches_per_epoch() const override { return batches.batches(); }
    det::batch get(int64_t, int64_t index) override { return batches.get(index); }
    sequential_batches batches;
  };

  tensor_pair on_device(det::batch& b) const {
    auto& [inputs, labels] = std::any_cast<tensor_pair&>(b);
    return {inputs.to(device_), labels.to(device_)};
  }

  // The data sets on the training device when [data] device_resident allows and they fit: then a
  // batch is gathered there (and the validation data sliced there), never copied from the host.
  void place_data(det::trial_context& context) {
    auto train = data_->train;
    auto validation = data_->validation.first(data_spec_.validation_limit);
    bool resident = false;
    if (device_.is_cuda()) {
      const int64_t bytes = train.bytes() + validation.bytes();
      switch (data_spec_.device_resident) {
        case residency::device: resident = true; break;
        case residency::host: resident = false; break;
        case residency::automatic: resident = bytes <= cuda_free_memory() / 4; break;
      }
      if (resident)
        context.log("The data (" + std::to_string(bytes >> 20) + " MiB) is resident on " + device_.str() + ".");
      at::globalContext().setBenchmarkCuDNN(true);  // fixed shapes: cuDNN picks its fastest kernels once
      // Channels-last pays in bfloat16 (cuDNN's tensor-core kernels); float32 keeps the default
      // layout, as the PyTorch loops it is measured against do.
      if (step_.mixed_precision) use_channels_last(model_);
    }
    train_set_ = resident ? train.to(device_) : train;
    validation_set_ = resident ? validation.to(device_) : validation;
  }

  // Whether the step can be captured as a CUDA graph, or why not (logged).
  bool can_capture(det::trial_context& context) {
    std::string why_not;
    if (!step_graphs_available(why_not)) {
    } else if (context.world_size() > 1) {
      why_not = "its gradients are averaged with other processes by host threads";
    } else if (hparams_.optimizer == optimizer_kind::adam && !fused_adam_available(device_)) {
      why_not = "LibTorch " TORCH_VERSION " has no fused Adam, whose step counts live on the device";
    }
    if (!why_not.empty()) {
      context.log("optimizations.cuda_graph is not applied: " + why_not + ".");
      return false;
    }
    context.log("optimizations.cuda_graph: the training step is captured as a CUDA graph after 3 batches and "
                "replayed for every full batch.");
    return true;
  }

  // One step through the captured graph: the batch is copied into the graph's inputs, and the
  // graph's forward, backward and optimizer step (the loss added to metrics_) run as one launch.
  void replay_step(const torch::Tensor& inputs, const torch::Tensor& labels) {
    if (!graph_) {
      graph_inputs_ = inputs.clone();
      graph_labels_ = labels.clone();
      graph_ = capture_step_graph(
          [this] {
            metrics_.add("loss", train_step(model_, *optimizer_, graph_inputs_, graph_labels_, step_));
          },
          /*warmup_calls=*/3);
    } else {
      graph_inputs_.copy_(inputs, /*non_blocking=*/true);
      graph_labels_.copy_(labels, /*non_blocking=*/true);
    }
    graph_->run();
  }

  // Seeded before it is built: the seed decides the initial weights.
  static Model seeded_model(const mlp_hparams& hparams, uint64_t seed, const torch::Device& device) {
    torch::manual_seed(seed);
    Model model = make_model(hparams, static_cast<Model*>(nullptr));
    model->to(device);
    return model;
  }

  det::trial_context& context_;
  mlp_hparams hparams_;
  data_settings data_spec_;
  std::shared_ptr<const trial_data> data_;
  torch::Device device_;
  Model model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<det::gradient_averager> averager_;  // a distributed run's; its hooks are on model_
  step_options step_;
  labelled_set train_set_, validation_set_;  // on the device when resident
  det::metric_sums metrics_;
  bool graph_wanted_ = false;
  std::unique_ptr<step_graph> graph_;
  torch::Tensor graph_inputs_, graph_labels_;  // what the captured step reads
};

}  // namespace
}  // namespace det::harness

// The built-in trials' factories, which the worker finds in libdet_torch_trials.so as a plugin's.
// Exported with DET_TRIAL, so that the library also loads as a plugin (bench_harness_overhead).
using mlp = det::harness::image_trial<det::harness::mlp>;
using cnn = det::harness::image_trial<det::harness::cnn>;
DET_TRIAL(mlp)
DET_TRIAL(cnn)
