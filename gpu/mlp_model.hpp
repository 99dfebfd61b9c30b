#pragma once

// Internal to det_harness and the bare-loop bench: it includes <torch/torch.h>, which costs ~18 s
// and over 1 GB per translation unit, so nothing else may include it.

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

/// Adam or SGD as the hyperparameters say, over `parameters`.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const mlp_hparams&, const std::vector<torch::Tensor>& parameters);

/// No timing: what train_step does unless a caller wants its phases timed.
struct no_lap {
  void operator()(const char*) const {}
};

/// One optimisation step, clipping the gradients' total norm to `clip_norm` when it is positive;
/// returns the batch's mean cross-entropy, detached. `lap(phase)` is called after "forward",
/// "backward" (and clipping) and "optimizer_step", for a caller that times them.
template <class Model, class Lap = no_lap>
torch::Tensor train_step(Model& model, torch::optim::Optimizer& optimizer, const torch::Tensor& inputs,
                         const torch::Tensor& labels, double clip_norm = 0, Lap lap = {}) {
  optimizer.zero_grad();
  auto loss = torch::nn::functional::cross_entropy(model->forward(inputs), labels);
  lap("forward");
  loss.backward();
  if (clip_norm > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), clip_norm);
  lap("backward");
  optimizer.step();
  lap("optimizer_step");
  return loss.detach();
}

struct evaluation {
  double loss = 0;
  double accuracy = 0;
};

/// Mean loss and accuracy over the set in eval mode without gradients; leaves the model in train mode.
template <class Model>
evaluation evaluate(Model& model, const labelled_set& data, int64_t batch_size = 1000) {
  torch::NoGradGuard no_grad;
  model->eval();
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < data.size(); begin += batch_size) {
    int64_t end = std::min(begin + batch_size, data.size());
    auto logits = model->forward(data.inputs.slice(0, begin, end));
    auto labels = data.labels.slice(0, begin, end);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .template item<double>();
    correct += logits.argmax(1).eq(labels).sum().template item<int64_t>();
  }
  model->train();
  if (data.size() == 0) return {};
  return {loss_sum / static_cast<double>(data.size()), static_cast<double>(correct) / static_cast<double>(data.size())};
}

/// Training batches as contiguous slices of a seeded permutation, reshuffled after each full pass;
/// a pass drops the last partial batch so every batch has the same size.
class batch_stream {
 public:
  batch_stream(labelled_set data, int64_t batch_size, uint64_t seed);
  std::pair<torch::Tensor, torch::Tensor> next();
  /// Its place in the data: the shuffling generator, the current order and the position in it.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  void reshuffle();

  labelled_set data_;
  int64_t batch_size_;
  at::Generator generator_;
  torch::Tensor order_;
  int64_t position_ = 0;
};

/// Writes model.pt and optimizer.pt (torch::save archives a user can load on their own) and
/// trainer.pt, which holds what a bit-exact resume needs besides: the global CPU generator
/// (dropout) and the data order.
void save_trial_state(const std::string& dir, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                      const batch_stream& batches);

/// Reads what save_trial_state wrote; `weights_only` skips trainer.pt. Throws std::runtime_error
/// naming a checkpoint that does not fit the model.
void load_trial_state(const std::string& dir, bool weights_only, torch::nn::Module& model,
                      torch::optim::Optimizer& optimizer, batch_stream& batches);

/// "784-256-128-10", for logs.
std::string describe_layers(const std::vector<int64_t>& hidden_sizes);

}  // namespace det::harness
