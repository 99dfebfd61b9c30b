// The configs of commands, notebooks, shells and TensorBoards (det cmd run --config-file, ...):
// the first byte picks the kind.
#include "config/task_config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const det::config::task_kind kinds[] = {det::config::task_kind::command, det::config::task_kind::notebook,
                                                 det::config::task_kind::shell, det::config::task_kind::tensorboard};
  auto kind = kinds[data[0] % 4];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    det::config::parse_task_config(text, "fuzz-task.toml", kind);
  } catch (const det::config::config_error&) {
  }
  return 0;
}
