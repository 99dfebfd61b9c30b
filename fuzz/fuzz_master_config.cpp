// The master config reader (det-node --role=master --config).
#include "config/master_config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    det::config::parse_master_config(text, "fuzz-master.toml");
  } catch (const det::config::config_error&) {
  }
  return 0;
}
