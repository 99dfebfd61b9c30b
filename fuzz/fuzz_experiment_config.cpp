// The experiment config reader (det submit, POST /api/v1/experiments): any text is either a config
// or a config_error with a sentence.
#include "config/experiment_config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto cfg = det::config::parse_experiment_config(text, "fuzz.toml");
    (void)cfg.target_batches();
  } catch (const det::config::config_error&) {
  }
  return 0;
}
