#pragma once
// The checksum of TFRecord framing: CRC-32C (Castagnoli) with TensorFlow's (and LevelDB's) mask,
// so that a CRC of data that itself holds CRCs does not check out by accident.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace det::tensorboard {

/// CRC-32C of `data` (reflected polynomial 0x82F63B78), as RFC 3720 defines it.
uint32_t crc32c(std::string_view data);

/// The masked CRC-32C that TFRecord files store: ((c >> 15) | (c << 17)) + 0xA282EAD8.
uint32_t masked_crc32c(std::string_view data);

}  // namespace det::tensorboard
