#include "gpu/mlp_model.hpp"

#include "gpu/fused_adam.hpp"
#include "gpu/idx_file.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace det::harness {
namespace {

// The usual Fashion-MNIST statistics of the [0, 1] pixel values over the training set.
constexpr double fashion_mean = 0.2860;
constexpr double fashion_std = 0.3530;

// Trials with different seeds must see the same synthetic data, as they would a real data set.
constexpr uint64_t synthetic_data_seed = 20240601;

std::string find_idx_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  fs::path gz = fs::path(dir) / (name + ".gz");
  if (fs::exists(gz)) return gz.string();
  fs::path plain = fs::path(dir) / name;
  if (fs::exists(plain)) return plain.string();
  throw std::runtime_error("The Fashion-MNIST file " + gz.string() +
                           " does not exist; `apt-get install dataset-fashion-mnist` provides it, or "
                           "point the data setting 'data_dir' at a directory holding the IDX files.");
}

labelled_set read_fashion_split(const std::string& dir, const std::string& prefix) {
  std::string images_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  std::string labels_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");
  idx_array images = read_idx_file(images_path, 2051);
  idx_array labels = read_idx_file(labels_path, 2049);
  if (images.dims.size() != 3 || images.dims[1] * images.dims[2] != mlp_input_size)
    throw std::runtime_error("The file " + images_path + " does not hold 28x28 images.");
  if (labels.dims[0] != images.dims[0])
    throw std::runtime_error("The files " + images_path + " and " + labels_path +
                             " hold different numbers of samples.");
  int64_t n = images.dims[0];
  // from_blob borrows the vectors; .to() copies, so the tensors outlive them.
  auto pixels = torch::from_blob(images.values.data(), {n, mlp_input_size}, torch::kUInt8);
  auto classes = torch::from_blob(labels.values.data(), {n}, torch::kUInt8);
  if (n > 0 && classes.max().item<int64_t>() >= mlp_classes)
    throw std::runtime_error("The file " + labels_path + " holds labels outside 0-9.");
  return {pixels.to(torch::kFloat).div_(255).sub_(fashion_mean).div_(fashion_std), classes.to(torch::kLong)};
}

// Gaussian clouds around ten random centroids: learnable in a few hundred batches, yet not at once.
labelled_set make_synthetic_split(const torch::Tensor& centroids, int64_t n, at::Generator& generator) {
  auto labels = torch::randint(mlp_classes, {n}, generator, torch::kLong);
  auto inputs = centroids.index_select(0, labels) + torch::randn({n, mlp_input_size}, generator, torch::kFloat);
  return {inputs, labels};
}

std::shared_ptr<const trial_data> decode(const data_settings& settings) {
  auto data = std::make_shared<trial_data>();
  auto start = std::chrono::steady_clock::now();
  std::ostringstream what;
  if (settings.dataset == dataset_kind::fashion_mnist) {
    data->train = read_fashion_split(settings.data_dir, "train");
    data->validation = read_fashion_split(settings.data_dir, "t10k");
    what << "Fashion-MNIST from " << settings.data_dir;
  } else {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(synthetic_data_seed);
    auto centroids = torch::randn({mlp_classes, mlp_input_size}, generator, torch::kFloat) * 0.1;
    data->train = make_synthetic_split(centroids, settings.synthetic_train_size, generator);
    data->validation = make_synthetic_split(centroids, settings.synthetic_val_size, generator);
    what << "synthetic 10-class data";
  }
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  what << ": " << data->train.size() << " training and " << data->validation.size()
       << " validation samples, decoded in " << std::fixed << std::setprecision(2) << took.count() << " s";
  data->description = what.str();
  return data;
}

std::string cache_key(const data_settings& s) {
  if (s.dataset == dataset_kind::fashion_mnist) return "fashion-mnist:" + s.data_dir;
  return "synthetic:" + std::to_string(s.synthetic_train_size) + ":" + std::to_string(s.synthetic_val_size);
}

}  // namespace

mlp_impl::mlp_impl(const std::vector<int64_t>& hidden_sizes, double dropout) {
  int64_t width = mlp_input_size;
  for (int64_t hidden : hidden_sizes) {
    layers->push_back(torch::nn::Linear(width, hidden));
    layers->push_back(torch::nn::ReLU());
    if (dropout > 0) layers->push_back(torch::nn::Dropout(dropout));
    width = hidden;
  }
  layers->push_back(torch::nn::Linear(width, mlp_classes));
  register_module("layers", layers);
}

torch::Tensor mlp_impl::forward(const torch::Tensor& inputs) { return layers->forward(inputs); }

labelled_set labelled_set::first(int64_t n) const {
  if (n <= 0 || n >= size()) return *this;
  return {inputs.slice(0, 0, n), labels.slice(0, 0, n)};
}

labelled_set labelled_set::to(const torch::Device& device) const {
  return {inputs.to(device), labels.to(device)};
}

std::shared_ptr<const trial_data> load_trial_data(const data_settings& settings) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const trial_data>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[cache_key(settings)];
  if (!slot) slot = decode(settings);
  return slot;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const mlp_hparams& h, const std::vector<torch::Tensor>& parameters) {
  if (h.optimizer == optimizer_kind::sgd)
    return std::make_unique<torch::optim::SGD>(parameters,
                                               torch::optim::SGDOptions(h.learning_rate).momentum(h.momentum));
  return std::make_unique<fused_adam>(parameters, torch::optim::AdamOptions(h.learning_rate));
}

shuffled_batches::shuffled_batches(labelled_set data, int64_t batch_size, uint64_t seed, batch_share share)
    : data_(std::move(data)), batch_size_(batch_size), seed_(seed), share_(share) {
  if (batch_size_ > data_.size())
    throw std::runtime_error("The hyperparameter 'global_batch_size' (" + std::to_string(batch_size_) +
                             ") exceeds the " + std::to_string(data_.size()) + " training samples.");
}

std::pair<torch::Tensor, torch::Tensor> shuffled_batches::get(int64_t epoch, int64_t index) {
  if (epoch != epoch_) {
    // splitmix64 of (seed, epoch): unrelated permutations for neighbouring seeds and epochs.
    uint64_t z = seed_ + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(epoch + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    auto generator = at::make_generator<at::CPUGeneratorImpl>(z ^ (z >> 31));
    order_ = torch::randperm(data_.size(), generator, torch::kLong).to(data_.labels.device());
    epoch_ = epoch;
  }
  auto indices = order_.slice(0, index * batch_size_, (index + 1) * batch_size_);
  if (share_.processes > 1) indices = indices.tensor_split(share_.processes)[share_.rank];
  return {data_.inputs.index_select(0, indices), data_.labels.index_select(0, indices)};
}

std::pair<torch::Tensor, torch::Tensor> sequential_batches::get(int64_t index) const {
  int64_t begin = index * batch_size_, end = std::min(begin + batch_size_, data_.size());
  return {data_.inputs.slice(0, begin, end), data_.labels.slice(0, begin, end)};
}

std::string describe_layers(const std::vector<int64_t>& hidden_sizes) {
  std::string text = std::to_string(mlp_input_size);
  for (int64_t width : hidden_sizes) text += "-" + std::to_string(width);
  return text + "-" + std::to_string(mlp_classes);
}

void save_trial_state(const std::string& dir, torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  const std::filesystem::path path = dir;
  torch::serialize::OutputArchive weights;
  model.save(weights);
  weights.save_to((path / "model.pt").string());
  torch::save(optimizer, (path / "optimizer.pt").string());
  torch::serialize::OutputArchive trainer;
  auto generator = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    trainer.write("cpu_generator", generator.get_state());
  }
  trainer.save_to((path / "trainer.pt").string());
}

void load_trial_state(const std::string& dir, bool weights_only, torch::nn::Module& model,
                      torch::optim::Optimizer& optimizer) {
  const std::filesystem::path path = dir;
  try {
    torch::serialize::InputArchive weights;
    weights.load_from((path / "model.pt").string());
    model.load(weights);
    torch::load(optimizer, (path / "optimizer.pt").string());
    if (!weights_only) {
      torch::serialize::InputArchive archive;
      archive.load_from((path / "trainer.pt").string());
      torch::Tensor state;
      archive.read("cpu_generator", state);
      auto generator = at::detail::getDefaultCPUGenerator();
      {
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator.set_state(state);
      }
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error("Checkpoint " + dir + " cannot be loaded into this model: " + e.what_without_backtrace());
  }
}

}  // namespace det::harness
