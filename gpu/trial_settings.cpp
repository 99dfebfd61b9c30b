#include "gpu/trial_settings.hpp"

#include "gpu/settings_json.hpp"

#include <cmath>
#include <stdexcept>

namespace det::harness {

using nlohmann::json;
using namespace settings_json;

mlp_hparams parse_mlp_hparams(const std::string& text) {
  const std::string what = "hyperparameter";
  json obj = parse_object(text, "hyperparameters");
  mlp_hparams h;
  h.global_batch_size = get_integer(obj, what, "global_batch_size", h.global_batch_size);
  h.learning_rate = get_number(obj, what, "learning_rate", h.learning_rate);
  h.dropout = get_number(obj, what, "dropout", h.dropout);
  h.momentum = get_number(obj, what, "momentum", h.momentum);
  h.channels = get_integer(obj, what, "channels", h.channels);
  if (auto it = obj.find("hidden_sizes"); it != obj.end() && !it->is_null()) {
    if (!it->is_array()) wrong_type(what, "hidden_sizes", "a list of layer widths", *it);
    h.hidden_sizes.clear();
    for (const auto& width : *it) {
      auto value = as_integer(width);
      if (!value)
        throw std::runtime_error("Every entry of the hyperparameter 'hidden_sizes' must be an integer, not " +
                                 width.dump() + ".");
      h.hidden_sizes.push_back(*value);
    }
  }
  std::string optimizer = get_string(obj, what, "optimizer", "adam");
  if (optimizer == "adam") {
    h.optimizer = optimizer_kind::adam;
  } else if (optimizer == "sgd") {
    h.optimizer = optimizer_kind::sgd;
  } else {
    throw std::runtime_error("The hyperparameter 'optimizer' must be \"adam\" or \"sgd\", not \"" + optimizer +
                             "\".");
  }

  require(h.global_batch_size > 0, "The hyperparameter 'global_batch_size' must be positive, not " +
                                       std::to_string(h.global_batch_size) + ".");
  require(h.learning_rate > 0 && std::isfinite(h.learning_rate),
          "The hyperparameter 'learning_rate' must be a positive number.");
  require(h.dropout >= 0 && h.dropout < 1, "The hyperparameter 'dropout' must lie in [0, 1).");
  require(h.momentum >= 0 && h.momentum < 1, "The hyperparameter 'momentum' must lie in [0, 1).");
  require(h.channels > 0, "The hyperparameter 'channels' must be a positive integer.");
  for (int64_t width : h.hidden_sizes)
    require(width > 0, "Every entry of the hyperparameter 'hidden_sizes' must be positive, not " +
                           std::to_string(width) + ".");
  return h;
}

data_settings parse_data_settings(const std::string& text) {
  const std::string what = "data setting";
  json obj = parse_object(text, "data settings");
  data_settings d;
  std::string dataset = get_string(obj, what, "dataset", "fashion-mnist");
  if (dataset == "fashion-mnist") {
    d.dataset = dataset_kind::fashion_mnist;
  } else if (dataset == "synthetic") {
    d.dataset = dataset_kind::synthetic;
  } else {
    throw std::runtime_error("The data setting 'dataset' must be \"fashion-mnist\" or \"synthetic\", not \"" +
                             dataset + "\".");
  }
  d.data_dir = get_string(obj, what, "data_dir", d.data_dir);
  d.synthetic_train_size = get_integer(obj, what, "synthetic_train_size", d.synthetic_train_size);
  d.synthetic_val_size = get_integer(obj, what, "synthetic_val_size", d.synthetic_val_size);
  d.validation_limit = get_integer(obj, what, "validation_limit", d.validation_limit);
  require(d.synthetic_train_size > 0 && d.synthetic_val_size > 0,
          "The data settings 'synthetic_train_size' and 'synthetic_val_size' must be positive.");
  require(d.validation_limit >= 0, "The data setting 'validation_limit' must not be negative.");
  if (auto it = obj.find("device_resident"); it != obj.end() && !it->is_null()) {
    if (it->is_boolean())
      d.device_resident = it->get<bool>() ? residency::device : residency::host;
    else if (it->is_string() && it->get<std::string>() == "auto")
      d.device_resident = residency::automatic;
    else
      wrong_type(what, "device_resident", "\"auto\", true or false", *it);
  }
  return d;
}

}  // namespace det::harness
