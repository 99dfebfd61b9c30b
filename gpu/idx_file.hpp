#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace det::harness {

/// An unsigned-byte IDX array (the MNIST file format): its dimensions and row-major values.
struct idx_array {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;
};

/// Reads an IDX file in place, gzipped or not, checking its magic number (2051 for images, 2049 for
/// labels). Throws std::runtime_error naming the file when it cannot be read or is malformed.
idx_array read_idx_file(const std::string& path, uint32_t expected_magic);

}  // namespace det::harness
