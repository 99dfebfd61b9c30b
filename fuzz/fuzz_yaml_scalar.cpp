// One plain YAML scalar, as a config's value: the numbers, booleans and nulls YAML 1.1 reads
// (a scalar of 200,000 digits once exhausted the master's stack in std::regex).
#include "config/experiment_config.hpp"
#include "config/yaml_config.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string scalar(reinterpret_cast<const char*>(data), size);
  std::replace(scalar.begin(), scalar.end(), '\n', ' ');  // one line: the value of one key
  try {
    det::config::parse_yaml_experiment_config("name: fuzz\nmax_restarts: " + scalar + "\n", "fuzz.yaml");
  } catch (const det::config::config_error&) {
  }
  return 0;
}
