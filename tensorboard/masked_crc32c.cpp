#include "tensorboard/masked_crc32c.hpp"

#include <array>

namespace det::tensorboard {

namespace {

constexpr uint32_t castagnoli_reflected = 0x82F63B78u;
constexpr uint32_t mask_delta = 0xA282EAD8u;  // TensorFlow's kMaskDelta

// One table lookup per byte: records are a few hundred bytes, so slicing-by-8 or the SSE4.2
// instruction would not show in a training run.
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ castagnoli_reflected : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr auto table = make_table();

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char byte : data) c = table[(c ^ byte) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + mask_delta;
}

}  // namespace det::tensorboard
