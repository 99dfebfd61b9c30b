// Model-definition archives, as a worker unpacks them (det::runtime::unpack_archive): any bytes,
// plain tar or gzip-compressed. An archive may be refused with a sentence; what it must never do
// is put anything outside the directory it is unpacked into, which each run checks by looking
// at the directory around it.
#include "node/tar_archive.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

/// <tmp>/det-fuzz-archive-PID/: `into` is unpacked in it and must be all it holds afterwards.
const fs::path& around() {
  static const fs::path dir = fs::temp_directory_path() / ("det-fuzz-archive-" + std::to_string(::getpid()));
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path into = around() / "into";
  fs::remove_all(around());
  fs::create_directories(around());
  try {
    det::runtime::unpack_archive(std::string(reinterpret_cast<const char*>(data), size), into.string());
  } catch (const std::runtime_error&) {
    // A refused archive is a good answer; how far it got must still be inside `into`.
  }
  for (const auto& entry : fs::directory_iterator(around()))
    if (entry.path() != into) std::abort();  // an entry escaped the directory it was unpacked into
  fs::remove_all(around());
  return 0;
}
