#include "config/experiment_config.hpp"
#include "config/yaml_config.hpp"

#include "config/config_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace det::config {

std::optional<length> searcher_config::training_length() const {
  if (max_length) return max_length;
  if (max_time) {
    if (auto unit = length_unit_from_string(time_metric)) return length{*unit, *max_time};
  }
  // PBT survivors train one more round each time, up to num_rounds rounds in all.
  if (length_per_round && num_rounds > 0)
    return length{length_per_round->unit, length_per_round->value * num_rounds};
  return std::nullopt;
}

bool searcher_config::trains_until_exit() const {
  return (name == "single" || name == "random" || name == "grid") && !training_length();
}

std::optional<int64_t> experiment_config::global_batch_size() const {
  auto it = hparams.find("global_batch_size");
  if (it == hparams.end() || it->second.type != hyperparameter_type::constant) return std::nullopt;
  const auto& text = it->second.value_json;
  // JSON text of a positive integer is digits only, without a leading zero.
  bool digits = !text.empty() && text.size() <= 18 && text[0] != '0' &&
                std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
  if (!digits) return std::nullopt;
  return std::stoll(text);
}

int64_t experiment_config::batches_in(const length& l) const {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (l.unit == length_unit::batches) return l.value;
  auto batch_size = global_batch_size();
  if (!batch_size) return 0;
  if (l.unit == length_unit::records) return ceil_div(l.value, *batch_size);
  if (records_per_epoch <= 0) return 0;
  return ceil_div(l.value * records_per_epoch, *batch_size);
}

int64_t experiment_config::target_batches() const {
  auto l = searcher.training_length();
  return l ? batches_in(*l) : 0;
}

std::string read_experiment_config_file(const std::string& path) {
  return detail::read_config_file(path);
}

experiment_config load_experiment_config(const std::string& path) {
  auto text = detail::read_config_file(path);
  return is_yaml_path(path) ? parse_yaml_experiment_config(text, path) : parse_experiment_config(text, path);
}

bool experiment_config::harness_entrypoint() const {
  if (entrypoint.size() != 1) return false;
  const auto& entry = entrypoint.front();
  return entry.rfind("builtin:", 0) == 0 || entry.rfind("plugin:", 0) == 0;
}

bool experiment_config::legacy_trial_class_entrypoint() const {
  if (entrypoint.size() != 1 || harness_entrypoint()) return false;
  // MODULE:CLASS as Determined matches it (^[a-zA-Z0-9_.]+:[a-zA-Z0-9_]+$), scanned by hand: det
  // reads no user input with std::regex, which recurses a frame a character.
  const auto& entry = entrypoint.front();
  const auto colon = entry.find(':');
  auto all_of = [&](size_t from, size_t to, bool dots) {
    return from < to && std::all_of(entry.begin() + static_cast<std::ptrdiff_t>(from), entry.begin() + static_cast<std::ptrdiff_t>(to),
                                    [&](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (dots && c == '.'); });
  };
  return colon != std::string::npos && all_of(0, colon, true) && all_of(colon + 1, entry.size(), false);
}

std::vector<std::string> experiment_config::process_command() const {
  if (!legacy_trial_class_entrypoint()) return entrypoint;
  return {"python3", "-m", "determined.launch.torch_distributed", "--",
          "python3", "-m", "determined.exec.harness", entrypoint.front()};
}

bool experiment_config::process_decides_length() const {
  return !harness_entrypoint() && !legacy_trial_class_entrypoint();
}

bool experiment_config::trains_with_libtorch() const {
  return harness_entrypoint() && entrypoint.front() != "builtin:simulate";
}

} // namespace det::config
