// Determined's YAML experiment configs: read, turned into TOML and checked.
#include "config/experiment_config.hpp"
#include "config/yaml_config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    det::config::parse_yaml_experiment_config(text, "fuzz.yaml");
  } catch (const det::config::config_error&) {
  }
  return 0;
}
