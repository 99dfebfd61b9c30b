#pragma once
// builtin:gpt's model: a GPT-2-style decoder, after nanoGPT's model.py. Token and position
// embeddings, n_layer blocks of pre-LayerNorm causal self-attention and a 4x GELU MLP, a final
// LayerNorm, and an lm_head that shares the token embedding's weight. Internal to
// libdet_torch_trials, like mlp_model.hpp (it includes torch).

#include "gpu/gpt_settings.hpp"

#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace det::harness {

/// Multi-head causal self-attention: through at::scaled_dot_product_attention on LibTorch 2
/// (a fused kernel ATen picks on a GPU: flash, memory-efficient or cuDNN attention), as an explicitly
/// masked softmax on LibTorch 1.13.
struct causal_self_attention_impl : torch::nn::Module {
  explicit causal_self_attention_impl(const gpt_hparams&);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, C] -> [B, T, C]

  torch::nn::Linear c_attn;  // q, k and v at once
  torch::nn::Linear c_proj;  // a residual projection
  torch::nn::Dropout resid_dropout;
  int64_t n_head;
  double dropout;
};
TORCH_MODULE_IMPL(causal_self_attention, causal_self_attention_impl);

/// n_embd -> 4 n_embd -> GELU -> n_embd, then dropout.
struct gpt_mlp_impl : torch::nn::Module {
  explicit gpt_mlp_impl(const gpt_hparams&);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear c_fc;
  torch::nn::Linear c_proj;  // a residual projection
  torch::nn::Dropout dropout;
};
TORCH_MODULE_IMPL(gpt_mlp, gpt_mlp_impl);

/// x + attn(ln_1(x)), then x + mlp(ln_2(x)).
struct gpt_block_impl : torch::nn::Module {
  explicit gpt_block_impl(const gpt_hparams&);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::LayerNorm ln_1;
  causal_self_attention attn;
  torch::nn::LayerNorm ln_2;
  gpt_mlp mlp;
};
TORCH_MODULE_IMPL(gpt_block, gpt_block_impl);

/// The decoder. Built with GPT-2's initialisation (normal, std 0.02; the residual projections'
/// std scaled by 1/sqrt(2 n_layer); biases zero) from the global generator: seed it first.
struct gpt_model_impl : torch::nn::Module {
  explicit gpt_model_impl(const gpt_hparams&);
  /// Token ids [B, T] (T <= block_size) -> logits [B, T, vocab_size].
  torch::Tensor forward(const torch::Tensor& tokens);
  /// The mean cross-entropy of predicting `targets` [B, T] (float32, whatever the autocast).
  torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets);
  /// Parameters, the position embeddings left out (what gpt_parameters_without_positions counts).
  int64_t parameters_without_positions();
  /// The parameters AdamW decays (every weight matrix and embedding: those of two or more
  /// dimensions) and those it does not (biases and LayerNorm gains), as nanoGPT splits them.
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> decay_groups();

  int64_t block_size;
  torch::nn::Embedding wte;  // token embedding, also the lm_head's weight
  torch::nn::Embedding wpe;  // position embedding
  torch::nn::Dropout drop;
  torch::nn::ModuleList h;  // the blocks, as registered
  torch::nn::LayerNorm ln_f;
  std::vector<gpt_block> blocks;  // the same blocks, typed for forward
};
TORCH_MODULE_IMPL(gpt_model, gpt_model_impl);

}  // namespace det::harness
