#include "gpu/idx_file.hpp"

#include <zlib.h>

#include <memory>
#include <stdexcept>

namespace det::harness {
namespace {

struct gz_closer {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using gz_handle = std::unique_ptr<gzFile_s, gz_closer>;

void read_exactly(gzFile_s* file, void* out, size_t size, const std::string& path) {
  auto* dst = static_cast<unsigned char*>(out);
  while (size > 0) {
    unsigned chunk = size > (1u << 30) ? (1u << 30) : static_cast<unsigned>(size);
    int got = gzread(file, dst, chunk);
    if (got <= 0) throw std::runtime_error("The IDX file " + path + " is truncated or corrupt.");
    dst += got;
    size -= static_cast<size_t>(got);
  }
}

uint32_t big_endian(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

}  // namespace

idx_array read_idx_file(const std::string& path, uint32_t expected_magic) {
  // gzopen reads uncompressed files transparently, so unpacked copies work too.
  gz_handle file{gzopen(path.c_str(), "rb")};
  if (!file) throw std::runtime_error("Cannot open the IDX file " + path + ".");
  gzbuffer(file.get(), 1 << 18);

  unsigned char word[4];
  read_exactly(file.get(), word, 4, path);
  uint32_t magic = big_endian(word);
  if (magic != expected_magic)
    throw std::runtime_error("The file " + path + " has IDX magic number " + std::to_string(magic) +
                             " where " + std::to_string(expected_magic) + " was expected.");
  idx_array array;
  size_t count = 1;
  // The magic's low byte is the number of dimensions; 0x08 in the next byte means unsigned bytes.
  for (uint32_t i = 0; i < (magic & 0xff); ++i) {
    read_exactly(file.get(), word, 4, path);
    array.dims.push_back(big_endian(word));
    count *= big_endian(word);
  }
  array.values.resize(count);
  read_exactly(file.get(), array.values.data(), count, path);
  return array;
}

}  // namespace det::harness
