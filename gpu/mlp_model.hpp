#pragma once

// Internal to det_harness and the bare-loop bench: it includes <torch/torch.h>, which costs ~18 s
// and over 1 GB per translation unit, so nothing else may include it.

#include "det/torch_data_parallel.hpp"
#include "gpu/mixed_precision.hpp"
#include "gpu/trial_settings.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace det::harness {

constexpr int64_t mlp_input_size = 28 * 28;
constexpr int64_t mlp_classes = 10;

/// 784 -> hidden_sizes... -> 10 with ReLU and dropout after each hidden layer; outputs logits.
struct mlp_impl : torch::nn::Module {
  mlp_impl(const std::vector<int64_t>& hidden_sizes, double dropout);
  torch::Tensor forward(const torch::Tensor& inputs);

  torch::nn::Sequential layers;
};
TORCH_MODULE_IMPL(mlp, mlp_impl);

struct labelled_set {
  torch::Tensor inputs;  // float [n, 784], normalised
  torch::Tensor labels;  // int64 [n]
  int64_t size() const { return labels.size(0); }
  int64_t bytes() const { return inputs.nbytes() + labels.nbytes(); }
  labelled_set first(int64_t n) const;
  labelled_set to(const torch::Device& device) const;
};

struct trial_data {
  labelled_set train;
  labelled_set validation;
  std::string description;  // what was loaded from where, for the trial's log
};

/// The data set the settings name, decoded once per process and shared by later trials.
std::shared_ptr<const trial_data> load_trial_data(const data_settings&);

/// Adam (fused where ATen can, gpu/fused_adam.hpp) or SGD as the hyperparameters say, over `parameters`.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const mlp_hparams&, const std::vector<torch::Tensor>& parameters);

/// No timing: what train_step does unless a caller wants its phases timed.
struct no_lap {
  void operator()(const char*) const {}
};

/// How train_step trains besides the model and optimizer.
struct step_options {
  double clip_norm = 0;        // clip the gradients' total norm to this when positive
  bool mixed_precision = false;  // forward pass under CUDA autocast
  det::gradient_averager* averager = nullptr;  // a distributed trial's: gradients averaged over its processes
};

/// Scales the gradients of `parameters` so that their total norm is at most `max_norm`, as
/// torch::nn::utils::clip_grad_norm_ does, but without reading the norm on the host: on a GPU the
/// step then never waits for the device (and can be captured as a CUDA graph).
inline void clip_gradients_on_device(const std::vector<torch::Tensor>& parameters, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  for (const auto& p : parameters)
    if (p.grad().defined()) norms.push_back(p.grad().norm(2).to(torch::kFloat));
  if (norms.empty()) return;
  auto scale = torch::clamp_max(max_norm / (torch::stack(norms).norm(2) + 1e-6), 1.0);
  for (const auto& p : parameters)
    if (p.grad().defined()) p.grad().mul_(scale);
}

/// One optimisation step; returns the batch's mean cross-entropy, detached. `lap(phase)` is called
/// after "forward", "backward" (and clipping) and "optimizer_step", for a caller that times them.
template <class Model, class Lap = no_lap>
torch::Tensor train_step(Model& model, torch::optim::Optimizer& optimizer, const torch::Tensor& inputs,
                         const torch::Tensor& labels, step_options options = {}, Lap lap = {}) {
  optimizer.zero_grad();
  torch::Tensor loss;
  {
    cuda_autocast autocast(options.mixed_precision);  // forward only: backward runs in the forward's types
    loss = torch::nn::functional::cross_entropy(model->forward(inputs), labels);
  }
  lap("forward");
  if (options.averager) options.averager->prepare();
  loss.backward();  // with an averager, buckets of gradients are averaged while it runs
  if (options.averager) options.averager->synchronize();
  if (options.clip_norm > 0) {
    if (inputs.is_cuda())
      clip_gradients_on_device(model->parameters(), options.clip_norm);
    else
      torch::nn::utils::clip_grad_norm_(model->parameters(), options.clip_norm);
  }
  lap("backward");
  optimizer.step();
  lap("optimizer_step");
  return loss.detach();
}

struct evaluation {
  double loss = 0;
  double accuracy = 0;
};

/// Mean loss and accuracy of one batch in eval mode without gradients; leaves the model in train mode.
template <class Model>
evaluation evaluate_batch(Model& model, const torch::Tensor& inputs, const torch::Tensor& labels,
                          bool mixed_precision = false) {
  if (labels.size(0) == 0) return {};
  torch::NoGradGuard no_grad;
  model->eval();
  torch::Tensor logits;
  {
    cuda_autocast autocast(mixed_precision);
    logits = model->forward(inputs).to(torch::kFloat32);
  }
  model->train();
  return {torch::nn::functional::cross_entropy(logits, labels).template item<double>(),
          logits.argmax(1).eq(labels).to(torch::kFloat64).mean().template item<double>()};
}

/// Which part of every batch a process of a distributed run trains on: part `rank` of `processes`
/// nearly equal parts, as det::share_of_batch splits a batch.
struct batch_share {
  int rank = 0;
  int processes = 1;
};

/// Training batches as slices of a permutation drawn from (seed, epoch), so that a position in the
/// data always gives the same batch; an epoch drops its last partial batch. With a share, only
/// that part of each batch is gathered: the others' rows are not copied for nothing.
class shuffled_batches {
 public:
  shuffled_batches(labelled_set data, int64_t batch_size, uint64_t seed, batch_share share = {});
  int64_t batches_per_epoch() const { return data_.size() / batch_size_; }
  /// Inputs and labels of batch `index` in epoch `epoch` (this process's share of them).
  std::pair<torch::Tensor, torch::Tensor> get(int64_t epoch, int64_t index);

 private:
  labelled_set data_;
  int64_t batch_size_;
  uint64_t seed_;
  batch_share share_;
  int64_t epoch_ = -1;  // whose permutation `order_` is
  torch::Tensor order_;
};

/// Validation batches: consecutive slices of `batch_size` (the last one may be shorter).
class sequential_batches {
 public:
  sequential_batches(labelled_set data, int64_t batch_size) : data_(std::move(data)), batch_size_(batch_size) {}
  int64_t batches() const { return (data_.size() + batch_size_ - 1) / batch_size_; }
  std::pair<torch::Tensor, torch::Tensor> get(int64_t index) const;

 private:
  labelled_set data_;
  int64_t batch_size_;
};

/// Writes model.pt and optimizer.pt (torch::save archives a user can load on their own) and
/// trainer.pt, which holds what a bit-exact resume needs besides: the global CPU generator
/// (dropout). The harness keeps the position in the data.
void save_trial_state(const std::string& dir, torch::nn::Module& model, torch::optim::Optimizer& optimizer);

/// Reads what save_trial_state wrote; `weights_only` skips trainer.pt. Throws std::runtime_error
/// naming a checkpoint that does not fit the model.
void load_trial_state(const std::string& dir, bool weights_only, torch::nn::Module& model,
                      torch::optim::Optimizer& optimizer);

/// "784-256-128-10", for logs.
std::string describe_layers(const std::vector<int64_t>& hidden_sizes);

}  // namespace det::harness
