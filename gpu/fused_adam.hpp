#pragma once
// Adam and AdamW as LibTorch's own classes (the same options, state and checkpoints), stepping
// each parameter group in one fused ATen kernel (_fused_adam_/_fused_adamw_) where ATen has one
// for the parameters' device: CUDA from LibTorch 2.0, the CPU from 2.4. LibTorch's C++ optimizers
// launch about ten small kernels per parameter tensor, which at small batches is most of a step's
// time on a GPU; the fused kernel is one launch per group, as torch.optim.Adam(fused=True).
// Internal to libdet_torch_trials, like mlp_model.hpp (it includes torch).

#include <torch/torch.h>
#include <torch/version.h>

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace det::harness {

/// Whether ATen has a fused Adam kernel for tensors on `device` in this LibTorch.
inline bool fused_adam_available(const torch::Device& device) {
#if DET_NO_FUSED_ADAM
  (void)device;
  return false;
#elif TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return device.is_cuda() || device.is_cpu();
#elif TORCH_VERSION_MAJOR == 2
  return device.is_cuda();
#else
  (void)device;
  return false;
#endif
}

namespace detail {
template <class Base> struct adam_kinds;
template <> struct adam_kinds<torch::optim::Adam> {
  using options = torch::optim::AdamOptions;
  using state = torch::optim::AdamParamState;
  static constexpr bool decoupled_weight_decay = false;
};
template <> struct adam_kinds<torch::optim::AdamW> {
  using options = torch::optim::AdamWOptions;
  using state = torch::optim::AdamWParamState;
  static constexpr bool decoupled_weight_decay = true;
};
}  // namespace detail

/// torch::optim::Adam or AdamW whose step() is fused where fused_adam_available(). The step counts
/// live on the device then (a fused step reads them there, and a step replayed from a CUDA graph
/// advances them without the host): save() writes them back into LibTorch's state first.
template <class Base>
class fused_adam_step final : public Base {
  using kinds = detail::adam_kinds<Base>;

 public:
  using Base::Base;

  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override {
    // ATen's fused AdamW came in LibTorch 2.1, a release after its fused Adam.
    constexpr bool fused_kind = !kinds::decoupled_weight_decay || TORCH_VERSION_MAJOR > 2 ||
                                (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1);
    if (!fused_kind || this->param_groups().empty() || this->param_groups().front().params().empty() ||
        !fused_adam_available(this->param_groups().front().params().front().device()))
      return Base::step(closure);
#if TORCH_VERSION_MAJOR >= 2 && !DET_NO_FUSED_ADAM
    torch::NoGradGuard no_grad;
    torch::Tensor loss;
    if (closure) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    for (auto& group : this->param_groups()) fused_group_step(group);
    return loss;
#else
    return Base::step(closure);
#endif
  }

  void save(torch::serialize::OutputArchive& archive) const override {
    // const_cast: LibTorch's save is const, but the counts must first come back from the device.
    const_cast<fused_adam_step*>(this)->steps_to_state();
    Base::save(archive);
  }
  void load(torch::serialize::InputArchive& archive) override {
    Base::load(archive);
    device_steps_.clear();  // rebuilt from the loaded state at the next step
  }

 private:
  // LibTorch's state of `p`, made as LibTorch's step makes it (max_exp_avg_sq only for AMSGrad).
  typename kinds::state& state_of(const torch::Tensor& p, bool amsgrad) {
    auto& states = this->state();
    using key_type = typename std::decay_t<decltype(states)>::key_type;
    std::unique_ptr<torch::optim::OptimizerParamState>* slot;
    if constexpr (std::is_same_v<key_type, std::string>) {
      std::ostringstream key;  // LibTorch 1.x keys its state by the address as text
      key << p.unsafeGetTensorImpl();
      slot = &states[key.str()];
    } else {
      slot = &states[p.unsafeGetTensorImpl()];
    }
    if (!*slot) {
      auto fresh = std::make_unique<typename kinds::state>();
      fresh->step(0);
      fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      if (amsgrad) fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      *slot = std::move(fresh);
    }
    return static_cast<typename kinds::state&>(**slot);
  }

  torch::Tensor& device_step(const torch::Tensor& p, typename kinds::state& state) {
    auto& count = device_steps_[p.unsafeGetTensorImpl()];
    if (!count.defined())
      count = torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat));
    return count;
  }

  void steps_to_state() {
    for (auto& group : this->param_groups()) {
      const bool amsgrad = static_cast<typename kinds::options&>(group.options()).amsgrad();
      for (auto& p : group.params()) {
        auto it = device_steps_.find(p.unsafeGetTensorImpl());
        if (it != device_steps_.end())
          state_of(p, amsgrad).step(static_cast<int64_t>(it->second.template item<double>()));
      }
    }
  }

#if TORCH_VERSION_MAJOR >= 2 && !DET_NO_FUSED_ADAM
  void fused_group_step(torch::optim::OptimizerParamGroup& group) {
    auto& options = static_cast<typename kinds::options&>(group.options());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = state_of(p, options.amsgrad());
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(state.exp_avg());
      exp_avg_sqs.push_back(state.exp_avg_sq());
      if (options.amsgrad()) max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      steps.push_back(device_step(p, state));
      state.step(state.step() + 1);  // the host's count, right unless a graph replays the step
    }
    if (params.empty()) return;
    at::_foreach_add_(steps, 1);  // as torch.optim does before its fused kernel reads them
    const auto [beta1, beta2] = options.betas();
#if TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 1
    if constexpr (kinds::decoupled_weight_decay)
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, options.lr(), beta1, beta2,
                        options.weight_decay(), options.eps(), options.amsgrad(), /*maximize=*/false);
    else
#endif
      at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, options.lr(), beta1, beta2,
                       options.weight_decay(), options.eps(), options.amsgrad(), /*maximize=*/false);
  }
#endif

  std::unordered_map<const void*, torch::Tensor> device_steps_;  // float32 counts on the params' device
};

using fused_adam = fused_adam_step<torch::optim::Adam>;
using fused_adamw = fused_adam_step<torch::optim::AdamW>;

}  // namespace det::harness
