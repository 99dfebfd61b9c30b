// A checkpoint's metadata.json, as a worker reads it before resuming from the checkpoint
// (det::harness::read_checkpoint): any bytes. It is read or refused with a sentence.
#include "gpu/checkpoint_files.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path dir = fs::temp_directory_path() / ("det-fuzz-checkpoint-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "metadata.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    (void)det::harness::read_checkpoint(dir.string(), "det.mlp/1");
  } catch (const std::runtime_error&) {
  }
  return 0;
}
