// A grid search's size from its axes' counts (int, double, log and categorical, nested too):
// computed as a product before any point is made, and refused past the cap, whatever the counts.
#include "config/experiment_config.hpp"
#include "searcher/hyperparameter_grid.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string hparams;
  for (size_t i = 0; i + 9 <= size && i < 9 * 8; i += 9) {
    int64_t count = 0;
    std::memcpy(&count, data + i + 1, sizeof count);
    const std::string name = "h" + std::to_string(i / 9);
    const std::string counted = ", count = " + std::to_string(count) + " }\n";
    switch (data[i] % 5) {
      case 0: hparams += name + " = { type = \"int\", minval = " + std::to_string(count % 1000) + ", maxval = 1000000" + counted; break;
      case 1: hparams += name + " = { type = \"double\", minval = 0.0, maxval = 1.0" + counted; break;
      case 2: hparams += name + " = { type = \"log\", minval = -3.0, maxval = 0.0, base = 10.0" + counted; break;
      case 3: hparams += name + " = { type = \"categorical\", vals = [" + std::string(static_cast<size_t>(count & 7), '1') + "] }\n"; break;
      default: hparams += "[hyperparameters." + name + "]\nx = { type = \"double\", minval = 0.0, maxval = 1.0" + counted + "[hyperparameters]\n";
    }
  }
  try {
    auto config = det::config::parse_experiment_config(
        "entrypoint = \"builtin:mlp\"\n[searcher]\nname = \"grid\"\nmetric = \"loss\"\nmax_length = { batches = 1 }\n"
        "[hyperparameters]\n" + hparams, "fuzz-grid.toml");
    const auto points = det::searcher::hyperparameter_grid_size(config.hparams);
    auto grid = det::searcher::hyperparameter_grid(config.hparams, 1000);
    if (static_cast<int64_t>(grid.size()) != points) __builtin_trap();  // the size must be what is built
  } catch (const det::config::config_error&) {
  }
  return 0;
}
