// A convolutional network on Fashion-MNIST as a det trial plugin. It builds data loaders and says
// how to train and evaluate one batch, save and load; everything else (the loop, which batch comes
// next, metric averaging, checkpoints, stopping) is det's.
//
// Hyperparameters: global_batch_size, learning_rate, channels (of the first convolution).
// [data]: data_dir (the gzipped IDX files of Fashion-MNIST), train_limit, validation_limit.

#include <det/torch_data_parallel.hpp>
#include <det/torch_metrics.hpp>
#include <det/trial.hpp>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> read_gzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
  gzclose(file);
  return bytes;
}

uint32_t big_endian(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
}

/// Images as [n, 1, 28, 28] floats in [0, 1] and their labels, at most `limit` of them.
std::pair<torch::Tensor, torch::Tensor> load_split(const std::string& dir, const std::string& prefix, int64_t limit) {
  auto images = read_gzip(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  auto labels = read_gzip(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  int64_t n = std::min<int64_t>(big_endian(images, 4), limit);
  auto x = torch::from_blob(images.data() + 16, {n, 1, 28, 28}, torch::kUInt8).to(torch::kFloat32) / 255.0;
  auto y = torch::from_blob(labels.data() + 8, {n}, torch::kUInt8).to(torch::kInt64);
  return {x.clone(), y.clone()};
}

struct NetImpl : torch::nn::Module {
  explicit NetImpl(int64_t channels)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, channels, 3)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 2 * channels, 3)))),
        fc(register_module("fc", torch::nn::Linear(2 * channels * 5 * 5, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);  // 26 -> 13
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);  // 11 -> 5
    return fc(x.flatten(1));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

using Batch = std::pair<torch::Tensor, torch::Tensor>;  // images, labels

/// Training batches: slices of a permutation drawn from the trial's seed and the epoch, so that a
/// position always gives the same batch and a resumed trial goes on exactly where it stopped.
class ShuffledImages : public det::data_loader {
 public:
  ShuffledImages(torch::Tensor x, torch::Tensor y, int64_t batch_size, uint64_t seed)
      : x_(std::move(x)), y_(std::move(y)), batch_size_(batch_size), seed_(seed) {}
  int64_t batches_per_epoch() const override { return x_.size(0) / batch_size_; }
  det::batch get(int64_t epoch, int64_t index) override {
    if (epoch != epoch_) {
      auto generator = at::make_generator<at::CPUGeneratorImpl>(seed_ * 1000003 + static_cast<uint64_t>(epoch));
      order_ = torch::randperm(x_.size(0), generator, torch::kLong);
      epoch_ = epoch;
    }
    auto indices = order_.slice(0, index * batch_size_, (index + 1) * batch_size_);
    return Batch{x_.index_select(0, indices), y_.index_select(0, indices)};
  }

 private:
  torch::Tensor x_, y_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  torch::Tensor order_;
};

/// Validation batches in order.
class ImagesInOrder : public det::data_loader {
 public:
  ImagesInOrder(torch::Tensor x, torch::Tensor y, int64_t batch_size)
      : x_(std::move(x)), y_(std::move(y)), batch_size_(batch_size) {}
  int64_t batches_per_epoch() const override { return (x_.size(0) + batch_size_ - 1) / batch_size_; }
  det::batch get(int64_t, int64_t index) override {
    int64_t begin = index * batch_size_, end = std::min(begin + batch_size_, x_.size(0));
    return Batch{x_.slice(0, begin, end), y_.slice(0, begin, end)};
  }

 private:
  torch::Tensor x_, y_;
  int64_t batch_size_;
};

class CnnTrial : public det::trial {
 public:
  explicit CnnTrial(det::trial_context& context)
      : context_(context), batch_size_(static_cast<int64_t>(context.hparam("global_batch_size"))) {
    if (batch_size_ < 1) throw det::invalid_hyperparameters("global_batch_size must be at least 1");
    auto channels = static_cast<int64_t>(context.hparam("channels"));
    if (channels < 1) throw det::invalid_hyperparameters("channels must be at least 1");
    auto data = nlohmann::json::parse(context.data_json());
    auto dir = data.value("data_dir", std::string{"/usr/share/datasets/fashion-mnist"});
    std::tie(train_x_, train_y_) = load_split(dir, "train", data.value("train_limit", int64_t{60000}));
    std::tie(val_x_, val_y_) = load_split(dir, "t10k", data.value("validation_limit", int64_t{10000}));
    if (batch_size_ > train_x_.size(0)) throw det::invalid_hyperparameters("global_batch_size exceeds the training set");
    torch::manual_seed(context.seed());
    net_ = Net(channels);
    // Across agents (slots_per_trial larger than one agent): every process starts from the chief's weights.
    det::broadcast_parameters(context, net_->parameters());
    // Gradients averaged over the processes in buckets while backward runs (nothing to do alone).
    averager_ = std::make_unique<det::gradient_averager>(context, net_->parameters());
    optimizer_ = std::make_unique<torch::optim::Adam>(net_->parameters(),
                                                      torch::optim::AdamOptions(context.hparam("learning_rate")));
    context.log("CnnTrial: " + std::to_string(train_x_.size(0)) + " training images, " + std::to_string(channels) +
                " channels");
  }

  int64_t batch_size() const override { return batch_size_; }
  int64_t records_per_epoch() const override { return train_x_.size(0); }

  std::unique_ptr<det::data_loader> build_training_data_loader() override {
    return std::make_unique<ShuffledImages>(train_x_, train_y_, batch_size_, context_.seed());
  }
  std::unique_ptr<det::data_loader> build_validation_data_loader() override {
    return std::make_unique<ImagesInOrder>(val_x_, val_y_, 1000);
  }

  det::metrics train_batch(det::batch& b, int64_t, int64_t) override {
    auto& [all_images, all_labels] = std::any_cast<Batch&>(b);
    auto images = det::share_of_batch(context_, all_images);  // the whole batch alone
    auto labels = det::share_of_batch(context_, all_labels);
    optimizer_->zero_grad();
    auto loss = torch::cross_entropy_loss(net_->forward(images), labels);
    averager_->prepare();
    loss.backward();
    averager_->synchronize();
    optimizer_->step();
    // Summed where the loss is (on a GPU, the device) and read once per report period by
    // take_training_metrics: returning loss.item() here would make every batch wait for the GPU.
    losses_.add("loss", loss);
    losses_.end_batch();
    return {};
  }

  det::metrics take_training_metrics() override { return losses_.take(); }

  det::metrics evaluate_batch(det::batch& b) override {
    auto& [images, labels] = std::any_cast<Batch&>(b);
    torch::NoGradGuard no_grad;
    net_->eval();
    auto logits = net_->forward(images);
    net_->train();
    auto loss = torch::cross_entropy_loss(logits, labels).item<double>();
    auto accuracy = logits.argmax(1).eq(labels).to(torch::kFloat64).mean().item<double>();
    return {{"validation_loss", loss}, {"validation_accuracy", accuracy}};
  }

  void on_validation_end(int64_t batches_trained, const det::metrics& validation) override {
    best_accuracy_ = std::max(best_accuracy_, validation.at("validation_accuracy"));
    context_.log("CnnTrial: best validation accuracy so far " + std::to_string(best_accuracy_) + " (batch " +
                 std::to_string(batches_trained) + ")");
  }

  // The loaders need no state here: det resumes them at the batch it checkpointed. Dropout-free,
  // so the model and optimizer are all an exact resume needs.
  void save(const std::string& dir) override {
    torch::save(net_, dir + "/model.pt");
    torch::save(*optimizer_, dir + "/optimizer.pt");
  }

  void load(const std::string& dir, bool /*weights_only*/) override {
    torch::load(net_, dir + "/model.pt");
    torch::load(*optimizer_, dir + "/optimizer.pt");
  }

 private:
  det::trial_context& context_;
  int64_t batch_size_;
  double best_accuracy_ = 0;
  torch::Tensor train_x_, train_y_, val_x_, val_y_;
  Net net_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::unique_ptr<det::gradient_averager> averager_;
  det::metric_sums losses_;
};

} // namespace

DET_TRIAL(CnnTrial)
