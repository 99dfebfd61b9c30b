#include "gpu/token_data.hpp"

#include "det/trial.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace det::harness {
namespace {

// Trials with different seeds must see the same synthetic corpus, as they would a real one.
constexpr uint64_t synthetic_tokens_seed = 20250101;

// The share of the corpus that trains; the rest (its end) validates, as nanoGPT splits.
constexpr double train_share = 0.9;

// Byte-level tokens: every byte is a token of its own.
constexpr int64_t byte_vocabulary = 256;

const char* const fortunes_package_hint =
    "`apt-get install fortunes fortunes-min` provides it (the cookie files of Debian's fortune-mod), or point the "
    "data setting 'data_dir' at a directory of text files";

// splitmix64 of (seed, epoch): unrelated positions for neighbouring seeds and epochs.
uint64_t mix(uint64_t seed, int64_t epoch) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(epoch + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

torch::Tensor window_offsets(int64_t block_size, const torch::Device& device) {
  return torch::arange(block_size + 1, torch::TensorOptions().dtype(torch::kLong).device(device));
}

// The windows at `starts` [n] as inputs [n, T] and targets [n, T], gathered where the tokens are.
token_batch gather(const torch::Tensor& tokens, const torch::Tensor& offsets, const torch::Tensor& starts,
                   int64_t block_size) {
  auto windows = tokens.index_select(0, (starts.unsqueeze(1) + offsets).reshape({-1})).view({-1, block_size + 1});
  return {windows.slice(1, 0, block_size), windows.slice(1, 1, block_size + 1)};
}

void require_window(const torch::Tensor& tokens, int64_t block_size, const std::string& split) {
  if (tokens.size(0) > block_size) return;
  throw std::runtime_error("The " + split + " split holds " + std::to_string(tokens.size(0)) +
                           " tokens, too few for one window of block_size + 1 = " + std::to_string(block_size + 1) +
                           ": lower the hyperparameter 'block_size' or use a larger corpus.");
}

token_corpus split(torch::Tensor tokens) {
  const int64_t n = tokens.size(0), train = static_cast<int64_t>(static_cast<double>(n) * train_share);
  return {tokens.slice(0, 0, train), tokens.slice(0, train, n), ""};
}

std::shared_ptr<const token_corpus> decode(const token_data_settings& settings, int64_t vocab_size) {
  auto start = std::chrono::steady_clock::now();
  std::ostringstream what;
  token_corpus corpus;
  if (settings.dataset == token_dataset::fortunes) {
    std::string text = read_fortunes(settings.data_dir);
    auto bytes = torch::from_blob(text.data(), {static_cast<int64_t>(text.size())}, torch::kUInt8);
    corpus = split(bytes.to(torch::kLong));  // a copy: the tensors outlive the text
    what << "the fortunes corpus from " << settings.data_dir << " (" << text.size() << " bytes, byte-level tokens)";
  } else {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(synthetic_tokens_seed);
    corpus = split(torch::randint(vocab_size, {settings.synthetic_tokens}, generator, torch::kLong));
    what << settings.synthetic_tokens << " synthetic tokens below " << vocab_size;
  }
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  what << ": " << corpus.train.size(0) << " training and " << corpus.validation.size(0) << " validation tokens, read in "
       << std::fixed << std::setprecision(2) << took.count() << " s";
  corpus.description = what.str();
  return std::make_shared<const token_corpus>(std::move(corpus));
}

std::string cache_key(const token_data_settings& s, int64_t vocab_size) {
  if (s.dataset == token_dataset::fortunes) return "fortunes:" + s.data_dir;
  return "synthetic:" + std::to_string(s.synthetic_tokens) + ":" + std::to_string(vocab_size);
}

}  // namespace

std::string read_fortunes(const std::string& dir, std::size_t most_bytes) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error))
    throw std::runtime_error("The fortunes corpus directory " + dir + " does not exist; " + fortunes_package_hint + ".");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    // symlink_status: the package's NAME.u8 links repeat NAME; .dat files are strfile's indexes.
    if (!fs::is_regular_file(entry.symlink_status()) || entry.path().extension() == ".dat") continue;
    files.push_back(entry.path());
  }
  if (error) throw std::runtime_error("The fortunes corpus directory " + dir + " cannot be read: " + error.message() + ".");
  if (files.empty())
    throw std::runtime_error("The fortunes corpus directory " + dir + " holds no fortune files; " +
                             fortunes_package_hint + ".");
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("The fortune file " + file.string() + " cannot be read.");
    // Read in chunks up to the bound: a file's reported size can lie (/proc's say 0).
    char chunk[1 << 16];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
      if (text.size() + static_cast<std::size_t>(in.gcount()) > most_bytes)
        throw std::runtime_error("The corpus directory " + dir + " holds more than " + std::to_string(most_bytes >> 20) +
                                 " MiB of text, more than builtin:gpt reads: point 'data_dir' at the corpus alone.");
      text.append(chunk, static_cast<std::size_t>(in.gcount()));
    }
  }
  return text;
}

std::shared_ptr<const token_corpus> load_token_corpus(const token_data_settings& settings, int64_t vocab_size) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const token_corpus>> cache;
  if (settings.dataset == token_dataset::fortunes && vocab_size < byte_vocabulary)
    throw det::invalid_hyperparameters("The fortunes corpus is byte-level (256 tokens): the hyperparameter "
                                       "'vocab_size' must be at least 256, not " + std::to_string(vocab_size) + ".");
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[cache_key(settings, vocab_size)];
  if (!slot) slot = decode(settings, vocab_size);
  return slot;
}

token_windows::token_windows(torch::Tensor tokens, int64_t block_size, int64_t batch_size, uint64_t seed,
                             batch_share share)
    : tokens_(std::move(tokens)),
      offsets_(window_offsets(block_size, tokens_.device())),
      block_size_(block_size),
      batch_size_(batch_size),
      seed_(seed),
      share_(share),
      batches_per_epoch_(std::max<int64_t>(tokens_.size(0) / (batch_size * block_size), 1)) {
  require_window(tokens_, block_size_, "training");
}

token_batch token_windows::get(int64_t epoch, int64_t index) {
  if (epoch != epoch_) {
    // Drawn on the CPU (the same positions on any device), copied to the device once per epoch.
    auto generator = at::make_generator<at::CPUGeneratorImpl>(mix(seed_, epoch));
    starts_ = torch::randint(tokens_.size(0) - block_size_, {batches_per_epoch_ * batch_size_}, generator, torch::kLong)
                  .to(tokens_.device());
    epoch_ = epoch;
  }
  auto starts = starts_.slice(0, index * batch_size_, (index + 1) * batch_size_);
  if (share_.processes > 1) starts = starts.tensor_split(share_.processes)[share_.rank];
  return gather(tokens_, offsets_, starts, block_size_);
}

fixed_windows::fixed_windows(torch::Tensor tokens, int64_t block_size, int64_t batch_size, int64_t batches)
    : tokens_(std::move(tokens)),
      offsets_(window_offsets(block_size, tokens_.device())),
      block_size_(block_size),
      batch_size_(batch_size),
      batches_(batches) {
  require_window(tokens_, block_size_, "validation");
  const int64_t last_start = tokens_.size(0) - block_size_ - 1;
  starts_ = torch::linspace(0, static_cast<double>(last_start), batches_ * batch_size_, torch::kDouble)
                .floor()
                .to(torch::kLong)
                .to(tokens_.device());
}

token_batch fixed_windows::get(int64_t index) const {
  return gather(tokens_, offsets_, starts_.slice(0, index * batch_size_, (index + 1) * batch_size_), block_size_);
}

}  // namespace det::harness
