#include "gpu/gpt_model.hpp"

#include <torch/version.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace det::harness {
namespace {

// GPT-2's initialisation: weights ~ N(0, 0.02).
constexpr double init_std = 0.02;

torch::nn::LayerNorm layer_norm(int64_t n_embd) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({n_embd}));
}

// Dropout of probability 0 still runs a kernel that copies its input and writes a mask (twice
// per layer, forward and backward): skipped, as the model it is then is the same.
torch::Tensor dropped(torch::nn::Dropout& dropout, const torch::Tensor& x) {
  return dropout->options.p() > 0 ? dropout(x) : x;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

causal_self_attention_impl::causal_self_attention_impl(const gpt_hparams& h)
    : c_attn(register_module("c_attn", torch::nn::Linear(h.n_embd, 3 * h.n_embd))),
      c_proj(register_module("c_proj", torch::nn::Linear(h.n_embd, h.n_embd))),
      resid_dropout(register_module("resid_dropout", torch::nn::Dropout(h.dropout))),
      n_head(h.n_head),
      dropout(h.dropout) {}

torch::Tensor causal_self_attention_impl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), time = x.size(1), channels = x.size(2), head_dim = channels / n_head;
  auto qkv = c_attn(x).split(channels, /*dim=*/2);
  // [B, T, C] -> [B, n_head, T, head_dim]
  auto heads = [&](const torch::Tensor& t) { return t.view({batch, time, n_head, head_dim}).transpose(1, 2); };
  auto q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  const double attention_dropout = is_training() ? dropout : 0.0;
  torch::Tensor y;
#if TORCH_VERSION_MAJOR >= 2
  y = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, attention_dropout, /*is_causal=*/true);
#else
  // LibTorch 1.13 has no fused attention: softmax(q k^T / sqrt(d)) with the future masked out.
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  auto future = torch::ones({time, time}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  auto weights = torch::dropout(torch::softmax(scores, -1), attention_dropout, is_training());
  y = torch::matmul(weights, v);
#endif
  y = y.transpose(1, 2).contiguous().view({batch, time, channels});
  return dropped(resid_dropout, c_proj(y));
}

gpt_mlp_impl::gpt_mlp_impl(const gpt_hparams& h)
    : c_fc(register_module("c_fc", torch::nn::Linear(h.n_embd, 4 * h.n_embd))),
      c_proj(register_module("c_proj", torch::nn::Linear(4 * h.n_embd, h.n_embd))),
      dropout(register_module("dropout", torch::nn::Dropout(h.dropout))) {}

torch::Tensor gpt_mlp_impl::forward(const torch::Tensor& x) { return dropped(dropout, c_proj(torch::gelu(c_fc(x)))); }

gpt_block_impl::gpt_block_impl(const gpt_hparams& h)
    : ln_1(register_module("ln_1", layer_norm(h.n_embd))),
      attn(register_module("attn", causal_self_attention(h))),
      ln_2(register_module("ln_2", layer_norm(h.n_embd))),
      mlp(register_module("mlp", gpt_mlp(h))) {}

torch::Tensor gpt_block_impl::forward(torch::Tensor x) {
  x = x + attn(ln_1(x));
  return x + mlp(ln_2(x));
}

gpt_model_impl::gpt_model_impl(const gpt_hparams& hp)
    : block_size(hp.block_size),
      wte(register_module("wte", torch::nn::Embedding(hp.vocab_size, hp.n_embd))),
      wpe(register_module("wpe", torch::nn::Embedding(hp.block_size, hp.n_embd))),
      drop(register_module("drop", torch::nn::Dropout(hp.dropout))),
      h(register_module("h", torch::nn::ModuleList())),
      ln_f(register_module("ln_f", layer_norm(hp.n_embd))) {
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    blocks.emplace_back(hp);
    h->push_back(blocks.back());
  }
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::LinearImpl>()) {
      torch::nn::init::normal_(linear->weight, 0.0, init_std);
      if (linear->bias.defined()) torch::nn::init::zeros_(linear->bias);
    } else if (auto* embedding = module->as<torch::nn::EmbeddingImpl>()) {
      torch::nn::init::normal_(embedding->weight, 0.0, init_std);
    }
  }
  // GPT-2: each residual projection adds to a stream that 2 n_layer of them add to.
  const double residual_std = init_std / std::sqrt(2.0 * static_cast<double>(hp.n_layer));
  for (auto& item : named_parameters())
    if (ends_with(item.key(), "c_proj.weight")) torch::nn::init::normal_(item.value(), 0.0, residual_std);
}

torch::Tensor gpt_model_impl::forward(const torch::Tensor& tokens) {
  const int64_t time = tokens.size(1);
  if (time > block_size)
    throw std::invalid_argument("A sequence of " + std::to_string(time) + " tokens exceeds the model's block_size of " +
                                std::to_string(block_size) + ".");
  auto positions = torch::arange(time, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
  auto x = dropped(drop, wte(tokens) + wpe(positions));
  for (auto& block : blocks) x = block(x);
  // The lm_head: the token embedding's weight, tied (one parameter, trained by both uses).
  return torch::nn::functional::linear(ln_f(x), wte->weight);
}

torch::Tensor gpt_model_impl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
  auto logits = forward(tokens);
  return torch::nn::functional::cross_entropy(logits.view({-1, logits.size(-1)}).to(torch::kFloat),
                                              targets.reshape({-1}));
}

int64_t gpt_model_impl::parameters_without_positions() {
  int64_t count = 0;
  for (const auto& p : parameters()) count += p.numel();
  return count - wpe->weight.numel();
}

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> gpt_model_impl::decay_groups() {
  std::vector<torch::Tensor> decayed, not_decayed;
  for (const auto& p : parameters()) (p.dim() >= 2 ? decayed : not_decayed).push_back(p);
  return {decayed, not_decayed};
}

}  // namespace det::harness
