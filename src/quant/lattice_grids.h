// The lattice grids of ggml's i-quants (a grid index -> 4 or 8 small coordinates, one byte each, coordinate j in
// byte j) and the sign rule of their 7-bit sign fields. The grids are transcribed data (lattice_grids.cc); the sign
// rule is computed here from its definition.
#pragma once

#include <cstdint>

namespace pagoda::quant {

// IQ3_XXS: 256 points of 4 coordinates in {4, 12, 20, 28, 36, 44, 52, 62}.
extern const uint32_t kIq3XxsGrid[256];
// IQ3_S: 512 points of 4 coordinates in {1, 3, 5, 7, 9, 11, 13, 15}.
extern const uint32_t kIq3SGrid[512];
// IQ1_S and IQ1_M: 2048 points of 8 coordinates in {-1, 0, 1} (as int8 bytes).
extern const uint64_t kIq1SGrid[2048];
// IQ2_XXS (256 points), IQ2_XS (512) and IQ2_S (1024): 8 coordinates in {8, 25, 43}.
extern const uint64_t kIq2XxsGrid[256];
extern const uint64_t kIq2XsGrid[512];
extern const uint64_t kIq2SGrid[1024];

// Coordinate j (< 4) of a 4-byte grid point, coordinate j (< 8) of an 8-byte one.
inline uint8_t grid_coordinate(uint32_t point, int j) { return uint8_t(point >> (8 * j)); }
// (IQ1's coordinates are int8, IQ2's small positive bytes: both read as int8.)
inline int8_t grid_coordinate(uint64_t point, int j) { return int8_t(uint8_t(point >> (8 * j))); }

// ggml's ksigns_iq2xs: a 7-bit sign field s gives the signs of 8 values, bit j set = value j negative; the eighth
// bit is the parity of the other seven, so that the number of negatives is even.
inline uint8_t iq_signs_of(uint32_t s) {
  s &= 127;
  return uint8_t(s | uint32_t(__builtin_parity(s)) << 7);
}

}  // namespace pagoda::quant
