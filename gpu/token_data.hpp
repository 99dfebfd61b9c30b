#pragma once
// builtin:gpt's data: a corpus of tokens split 90/10 into training and validation, and the
// windows of block_size + 1 tokens that batches are cut from. Internal to libdet_torch_trials,
// like mlp_model.hpp (it includes torch).

#include "gpu/gpt_settings.hpp"
#include "gpu/mlp_model.hpp"

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace det::harness {

struct token_corpus {
  torch::Tensor train;       // int64 [n] token ids, on the CPU
  torch::Tensor validation;  // int64 [m], the corpus' last tenth
  std::string description;   // what was loaded from where, for the trial's log
};

/// The text of every fortune file in `dir` (the Debian package `fortunes`' cookie files: each
/// regular file whose name does not end in .dat, symbolic links left out), concatenated in file
/// name order. Throws std::runtime_error naming the directory and the package when it has none,
/// and naming the directory when its files hold more than `most_bytes` (data_dir is the user's:
/// one pointed at a log directory or /proc would fill the worker's memory).
inline constexpr std::size_t most_corpus_bytes = std::size_t{256} << 20;
std::string read_fortunes(const std::string& dir, std::size_t most_bytes = most_corpus_bytes);

/// The corpus the settings name, as tokens below `vocab_size`: the fortunes' bytes, or random
/// tokens from a fixed seed (the same for every trial). Read once per process and shared by later
/// trials. Throws std::runtime_error with a sentence naming the path and the package when the
/// corpus is missing, and det::invalid_hyperparameters when its bytes do not fit the vocabulary.
std::shared_ptr<const token_corpus> load_token_corpus(const token_data_settings&, int64_t vocab_size);

/// Inputs [B, T] and their next tokens, the targets [B, T].
using token_batch = std::pair<torch::Tensor, torch::Tensor>;

/// Training batches: windows of block_size + 1 tokens at random positions, drawn per epoch from a
/// generator seeded by (seed, epoch), so that a position in the data always gives the same batch.
/// An epoch is as many batches as cover the tokens once. The windows are gathered on the tokens'
/// device by index arithmetic: tokens on a GPU give batches on it, with no copy from the host.
/// With a share, only that part of each batch's windows is gathered.
class token_windows {
 public:
  token_windows(torch::Tensor tokens, int64_t block_size, int64_t batch_size, uint64_t seed, batch_share share = {});
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  token_batch get(int64_t epoch, int64_t index);

 private:
  torch::Tensor tokens_;
  torch::Tensor offsets_;  // 0 .. block_size, on the tokens' device
  int64_t block_size_;
  int64_t batch_size_;
  uint64_t seed_;
  batch_share share_;
  int64_t batches_per_epoch_;
  int64_t epoch_ = -1;  // whose window starts `starts_` holds
  torch::Tensor starts_;
};

/// Validation batches: `batches` batches of windows at evenly spaced positions across the tokens,
/// the same in every trial and every validation.
class fixed_windows {
 public:
  fixed_windows(torch::Tensor tokens, int64_t block_size, int64_t batch_size, int64_t batches);
  int64_t batches() const { return batches_; }
  token_batch get(int64_t index) const;

 private:
  torch::Tensor tokens_;
  torch::Tensor offsets_;
  int64_t block_size_;
  int64_t batch_size_;
  int64_t batches_;
  torch::Tensor starts_;
};

}  // namespace det::harness
