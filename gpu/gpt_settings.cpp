#include "gpu/gpt_settings.hpp"

#include "gpu/settings_json.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <utility>

namespace det::harness {
namespace {

using nlohmann::json;
using namespace settings_json;

void require_positive(int64_t value, const std::string& key) {
  require(value > 0, "The hyperparameter '" + key + "' must be a positive integer, not " + std::to_string(value) + ".");
}

// 2^30 tokens (8 GiB as int64): more would only exhaust the worker's memory.
constexpr int64_t max_synthetic_tokens = int64_t{1} << 30;

// Default min_learning_rate / learning_rate: nanoGPT's (and Chinchilla's) tenth.
constexpr double default_min_lr_ratio = 0.1;

}  // namespace

gpt_hparams parse_gpt_hparams(const std::string& text) {
  const std::string what = "hyperparameter";
  json obj = parse_object(text, "hyperparameters");
  gpt_hparams h;
  h.n_layer = get_integer(obj, what, "n_layer", h.n_layer);
  h.n_head = get_integer(obj, what, "n_head", h.n_head);
  h.n_embd = get_integer(obj, what, "n_embd", h.n_embd);
  h.block_size = get_integer(obj, what, "block_size", h.block_size);
  h.vocab_size = get_integer(obj, what, "vocab_size", h.vocab_size);
  h.dropout = get_number(obj, what, "dropout", h.dropout);
  h.global_batch_size = get_integer(obj, what, "global_batch_size", h.global_batch_size);
  h.learning_rate = get_number(obj, what, "learning_rate", h.learning_rate);
  h.weight_decay = get_number(obj, what, "weight_decay", h.weight_decay);
  h.warmup_batches = get_integer(obj, what, "warmup_batches", h.warmup_batches);
  h.lr_decay_batches = get_integer(obj, what, "lr_decay_batches", h.lr_decay_batches);
  h.peak_tflops = get_number(obj, what, "peak_tflops", h.peak_tflops);

  require_positive(h.n_layer, "n_layer");
  require_positive(h.n_head, "n_head");
  require_positive(h.n_embd, "n_embd");
  require_positive(h.block_size, "block_size");
  require_positive(h.vocab_size, "vocab_size");
  require_positive(h.global_batch_size, "global_batch_size");
  require(h.n_embd % h.n_head == 0, "The hyperparameter 'n_embd' (" + std::to_string(h.n_embd) +
                                        ") must be a multiple of 'n_head' (" + std::to_string(h.n_head) +
                                        "): each head gets an equal share of the embedding.");
  require(h.dropout >= 0 && h.dropout < 1, "The hyperparameter 'dropout' must lie in [0, 1).");
  require(h.learning_rate > 0 && std::isfinite(h.learning_rate),
          "The hyperparameter 'learning_rate' must be a positive number.");
  require(h.weight_decay >= 0 && std::isfinite(h.weight_decay),
          "The hyperparameter 'weight_decay' must not be negative.");
  require(h.warmup_batches >= 0, "The hyperparameter 'warmup_batches' must not be negative, not " +
                                     std::to_string(h.warmup_batches) + ".");
  require(h.lr_decay_batches > h.warmup_batches,
          "The hyperparameter 'lr_decay_batches' (" + std::to_string(h.lr_decay_batches) +
              ") must exceed 'warmup_batches' (" + std::to_string(h.warmup_batches) +
              "): the cosine decay runs between them.");
  require(h.peak_tflops >= 0 && std::isfinite(h.peak_tflops),
          "The hyperparameter 'peak_tflops' must not be negative.");

  // The minimum learning rate, given outright or as a share of the peak (not both).
  const bool absolute = has(obj, "min_learning_rate"), ratio = has(obj, "min_lr_ratio");
  require(!(absolute && ratio),
          "The hyperparameters 'min_learning_rate' and 'min_lr_ratio' say the same thing: give only one.");
  if (absolute) {
    h.min_learning_rate = get_number(obj, what, "min_learning_rate", 0);
    require(h.min_learning_rate >= 0 && h.min_learning_rate <= h.learning_rate,
            "The hyperparameter 'min_learning_rate' must lie between 0 and 'learning_rate'.");
  } else {
    double share = get_number(obj, what, "min_lr_ratio", default_min_lr_ratio);
    require(share >= 0 && share <= 1, "The hyperparameter 'min_lr_ratio' must lie in [0, 1].");
    h.min_learning_rate = h.learning_rate * share;
  }
  return h;
}

token_data_settings parse_token_data_settings(const std::string& text) {
  const std::string what = "data setting";
  json obj = parse_object(text, "data settings");
  token_data_settings d;
  std::string dataset = get_string(obj, what, "dataset", "fortunes");
  if (dataset == "fortunes") {
    d.dataset = token_dataset::fortunes;
  } else if (dataset == "synthetic_tokens") {
    d.dataset = token_dataset::synthetic_tokens;
  } else {
    throw std::runtime_error("The data setting 'dataset' must be \"fortunes\" or \"synthetic_tokens\" for "
                             "builtin:gpt, not \"" + dataset + "\".");
  }
  d.data_dir = get_string(obj, what, "data_dir", d.data_dir);
  d.synthetic_tokens = get_integer(obj, what, "synthetic_tokens", d.synthetic_tokens);
  d.validation_batches = get_integer(obj, what, "validation_batches", d.validation_batches);
  d.peak_tflops = get_number(obj, what, "peak_tflops", d.peak_tflops);
  require(d.synthetic_tokens > 0 && d.synthetic_tokens <= max_synthetic_tokens,
          "The data setting 'synthetic_tokens' must lie in 1.." + std::to_string(max_synthetic_tokens) + ", not " +
              std::to_string(d.synthetic_tokens) + ".");
  require(d.validation_batches > 0, "The data setting 'validation_batches' must be positive, not " +
                                        std::to_string(d.validation_batches) + ".");
  require(d.peak_tflops >= 0 && std::isfinite(d.peak_tflops), "The data setting 'peak_tflops' must not be negative.");
  return d;
}

double gpt_learning_rate(const gpt_hparams& h, int64_t batch_idx) {
  if (batch_idx < h.warmup_batches)
    return h.learning_rate * static_cast<double>(batch_idx + 1) / static_cast<double>(h.warmup_batches + 1);
  if (batch_idx >= h.lr_decay_batches) return h.min_learning_rate;
  const double progress = static_cast<double>(batch_idx - h.warmup_batches) /
                          static_cast<double>(h.lr_decay_batches - h.warmup_batches);
  const double coefficient = 0.5 * (1.0 + std::cos(M_PI * progress));  // 1 down to 0
  return h.min_learning_rate + coefficient * (h.learning_rate - h.min_learning_rate);
}

int64_t gpt_parameters_without_positions(const gpt_hparams& h) {
  const int64_t c = h.n_embd;
  const int64_t per_block = 2 * c                // ln_1
                            + c * 3 * c + 3 * c  // attention's q, k, v
                            + c * c + c          // attention's output projection
                            + 2 * c              // ln_2
                            + c * 4 * c + 4 * c  // MLP up
                            + 4 * c * c + c;     // MLP down
  return h.vocab_size * c + h.n_layer * per_block + 2 * c;  // token embedding (= lm_head), blocks, ln_f
}

double gpt_flops_per_token(const gpt_hparams& h, int64_t parameters_without_positions) {
  return 6.0 * static_cast<double>(parameters_without_positions) +
         12.0 * static_cast<double>(h.n_layer) * static_cast<double>(h.n_embd) * static_cast<double>(h.block_size);
}

double peak_bf16_flops(const std::string& device_name) {
  // Dense (not 2:4 sparse) bfloat16 tensor-core peaks from NVIDIA's data sheets, the more specific
  // names first ("H100 PCIe" before "H100", "A100" before "A10", "L40S" before "L40").
  static const std::pair<const char*, double> peaks[] = {
      {"GH200", 989e12}, {"H200", 989e12},  {"H100 NVL", 835e12}, {"H100 PCIe", 756e12}, {"H100", 989e12},
      {"H800", 989e12},  {"B200", 2250e12}, {"A100", 312e12},     {"A800", 312e12},      {"A6000", 155e12},
      {"L40S", 362e12},  {"L40", 181e12},   {"L4", 121e12},       {"RTX 4090", 165e12},
  };
  for (const auto& [name, flops] : peaks)
    if (device_name.find(name) != std::string::npos) return flops;
  return 0;
}

}  // namespace det::harness
