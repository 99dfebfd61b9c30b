#pragma once
// Data parallelism for a LibTorch trial (see det::trial_context::rank): the same initial weights
// in every process, each process's share of a batch, and the gradients of every process averaged
// in one collective call between the backward pass and the optimizer step.
//   det::broadcast_parameters(context, model->parameters());   // once the model is built
//   auto inputs = det::share_of_batch(context, batch_inputs);  // in train_batch
//   loss.backward();
//   det::average_gradients(context, model->parameters());
//   optimizer.step();

#include "det/trial.hpp"

#include <torch/torch.h>

#include <vector>

namespace det {

namespace detail {
// The tensors as one contiguous float32 buffer in host memory: one collective call for a model.
inline torch::Tensor flat_host_copy(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> flat;
  for (const auto& t : tensors) flat.push_back(t.detach().reshape({-1}));
  return torch::cat(flat).to(torch::kCPU, torch::kFloat).contiguous();
}
inline void copy_back(const torch::Tensor& buffer, std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(buffer.narrow(0, offset, n).view_as(t));
    offset += n;
  }
}
}  // namespace detail

/// Gives every process the chief's values of `parameters` (its initial weights), as PyTorch's
/// DistributedDataParallel does when it is built; nothing to do alone.
inline void broadcast_parameters(trial_context& context, std::vector<torch::Tensor> parameters) {
  if (context.world_size() < 2 || parameters.empty()) return;
  auto buffer = detail::flat_host_copy(parameters);
  context.broadcast(buffer.data_ptr<float>(), static_cast<std::size_t>(buffer.numel()));
  detail::copy_back(buffer, parameters);
}

/// Averages the gradients of `parameters` over the trial's processes; nothing to do alone.
/// Parameters without a gradient are left out (every process must have the same ones).
inline void average_gradients(trial_context& context, const std::vector<torch::Tensor>& parameters) {
  if (context.world_size() < 2) return;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return;
  auto buffer = detail::flat_host_copy(grads);
  context.average(buffer.data_ptr<float>(), static_cast<std::size_t>(buffer.numel()));
  detail::copy_back(buffer, grads);
}

/// Process rank()'s share of a batch's first dimension: one of world_size() nearly equal parts.
inline torch::Tensor share_of_batch(const trial_context& context, const torch::Tensor& batch) {
  if (context.world_size() < 2) return batch;
  return batch.tensor_split(context.world_size())[context.rank()];
}

}  // namespace det
