#pragma once
// builtin:gpt's settings: the hyperparameters and [data] table as checked, typed structs, and the
// pure arithmetic around them (the learning-rate schedule, parameter and FLOP counts, GPU peaks).
// Free of torch, like gpu/trial_settings.hpp, so that their errors are cheap to test.

#include <cstdint>
#include <string>

namespace det::harness {

/// A GPT-2-style decoder and how to train it. The defaults are a tiny model that learns the
/// fortunes corpus on a CPU in a minute; GPT-2 small is n_layer 12, n_head 12, n_embd 768,
/// block_size 1024, vocab_size 50304 (examples/gpt/README.md).
struct gpt_hparams {
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_embd = 64;
  int64_t block_size = 64;   // tokens of context
  int64_t vocab_size = 256;  // byte-level tokens for the fortunes corpus
  double dropout = 0;
  int64_t global_batch_size = 32;  // windows of block_size tokens per batch
  double learning_rate = 1e-3;     // the peak, after warm-up
  double weight_decay = 0.1;       // on 2-D weights only
  int64_t warmup_batches = 20;     // linear warm-up from ~0 to learning_rate
  int64_t lr_decay_batches = 5000;  // cosine decay to min_learning_rate ends here
  double min_learning_rate = 1e-4;  // learning_rate * min_lr_ratio unless given
  double peak_tflops = 0;           // the GPU's peak for mfu; 0: from peak_bf16_flops
};

enum class token_dataset { fortunes, synthetic_tokens };

/// builtin:gpt's [data] table.
struct token_data_settings {
  token_dataset dataset = token_dataset::fortunes;
  /// Where the Debian package `fortunes` (with `fortunes-min`) puts its text files.
  std::string data_dir = "/usr/share/games/fortunes";
  int64_t synthetic_tokens = 1 << 20;  // synthetic_tokens: the corpus' length, split 90/10
  int64_t validation_batches = 20;     // of global_batch_size windows each
  double peak_tflops = 0;              // as the hyperparameter, which takes precedence
};

/// Both throw std::runtime_error with a sentence naming the offending key; "" means all defaults.
gpt_hparams parse_gpt_hparams(const std::string& json);
token_data_settings parse_token_data_settings(const std::string& json);

/// The learning rate of batch `batch_idx` (from 0): nanoGPT's schedule, a linear warm-up over
/// warmup_batches, then a cosine decay to min_learning_rate at lr_decay_batches, constant after.
double gpt_learning_rate(const gpt_hparams&, int64_t batch_idx);

/// Parameters of the model the hyperparameters describe, the position embeddings left out (as
/// nanoGPT's get_num_params(non_embedding=True)); the lm_head shares the token embedding's.
int64_t gpt_parameters_without_positions(const gpt_hparams&);

/// Model FLOPs per trained token (forward and backward): 6 per parameter plus the attention's
/// 12 * n_layer * n_embd * block_size, as nanoGPT's estimate_mfu (PaLM, appendix B).
double gpt_flops_per_token(const gpt_hparams&, int64_t parameters_without_positions);

/// The dense bfloat16 peak in FLOP/s of the GPU `device_name` names (a substring match on the
/// CUDA device name, e.g. "NVIDIA H100 80GB HBM3"); 0 for a GPU not in the table.
double peak_bf16_flops(const std::string& device_name);

}  // namespace det::harness
