#include "gpu/idx_file.hpp"

#if DET_WITH_ZLIB
#include <zlib.h>
#endif

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace det::harness {
namespace {

// gzopen reads uncompressed files transparently, so unpacked copies work too. A torch-trials build
// on a node without zlib's headers (DET_WITH_ZLIB=0) reads unpacked files only.
#if DET_WITH_ZLIB
struct closer {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using file_handle = std::unique_ptr<gzFile_s, closer>;
file_handle open_file(const std::string& path) {
  file_handle file{gzopen(path.c_str(), "rb")};
  if (file) gzbuffer(file.get(), 1 << 18);
  return file;
}
int read_some(gzFile_s* file, unsigned char* dst, unsigned size) { return gzread(file, dst, size); }
#else
struct closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using file_handle = std::unique_ptr<std::FILE, closer>;
file_handle open_file(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)
    throw std::runtime_error("The IDX file " + path + " is gzipped, and this build of det's torch trials has no zlib: "
                             "gunzip it, or rebuild them where zlib's headers are installed.");
  return file_handle{std::fopen(path.c_str(), "rb")};
}
int read_some(std::FILE* file, unsigned char* dst, unsigned size) {
  return static_cast<int>(std::fread(dst, 1, size, file));
}
#endif

void read_exactly(const file_handle& file, void* out, size_t size, const std::string& path) {
  auto* dst = static_cast<unsigned char*>(out);
  while (size > 0) {
    unsigned chunk = size > (1u << 30) ? (1u << 30) : static_cast<unsigned>(size);
    int got = read_some(file.get(), dst, chunk);
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
  file_handle file = open_file(path);
  if (!file) throw std::runtime_error("Cannot open the IDX file " + path + ".");

  unsigned char word[4];
  read_exactly(file, word, 4, path);
  uint32_t magic = big_endian(word);
  if (magic != expected_magic)
    throw std::runtime_error("The file " + path + " has IDX magic number " + std::to_string(magic) +
                             " where " + std::to_string(expected_magic) + " was expected.");
  idx_array array;
  size_t count = 1;
  // The magic's low byte is the number of dimensions; 0x08 in the next byte means unsigned bytes.
  for (uint32_t i = 0; i < (magic & 0xff); ++i) {
    read_exactly(file, word, 4, path);
    array.dims.push_back(big_endian(word));
    count *= big_endian(word);
  }
  array.values.resize(count);
  read_exactly(file, array.values.data(), count, path);
  return array;
}

}  // namespace det::harness
