#pragma once

#include <cstdint>
#include <random>

namespace det::searcher {

// Draws built on the engine's raw 64-bit output: std::mt19937_64 is specified exactly, but the
// std:: distributions are not, and a seed must give the same search with every standard library.

/// Uniform in [0, 1), with 53 random bits.
inline double draw_unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

/// Uniform in [0, n) for n > 0, without modulo bias: draws below 2^64 mod n are redrawn.
inline uint64_t draw_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;
  for (;;) {
    uint64_t x = rng();
    if (x >= threshold) return x % n;
  }
}

} // namespace det::searcher
