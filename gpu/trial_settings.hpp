#pragma once

#include <cstdint>
#include <string>
#include <vector>

// The plan's JSON parsed into checked, typed settings; kept free of torch so parsing errors are
// cheap to test and the bench can share the defaults.
namespace det::harness {

enum class optimizer_kind { adam, sgd };

struct mlp_hparams {
  int64_t global_batch_size = 64;
  double learning_rate = 0.001;
  std::vector<int64_t> hidden_sizes{256, 128};
  double dropout = 0.1;
  optimizer_kind optimizer = optimizer_kind::adam;
  double momentum = 0;  // sgd only
  int64_t channels = 16;  // builtin:cnn: its first convolution's
};

enum class dataset_kind { fashion_mnist, synthetic };

/// [data] device_resident: whether the whole data set is copied to the training device once, so
/// that a batch is gathered there and never crosses from the host ("auto": on a GPU, when the
/// data takes at most a quarter of its free memory).
enum class residency { automatic, device, host };

struct data_settings {
  dataset_kind dataset = dataset_kind::fashion_mnist;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t synthetic_train_size = 4096;
  int64_t synthetic_val_size = 1024;
  int64_t validation_limit = 0;  // 0 = the whole validation set
  residency device_resident = residency::automatic;
};

/// Both throw std::runtime_error with a sentence naming the offending key; "" means all defaults.
mlp_hparams parse_mlp_hparams(const std::string& json);
data_settings parse_data_settings(const std::string& json);

}  // namespace det::harness
