// BlockQ4_0x8 and BlockQ4_0x16: eight (sixteen) rows' Q4_0 blocks of the same 32 columns, interleaved so that one
// 32-byte (64-byte) load holds four values of each of the rows (an in-memory layout made at load time, never
// written to a file). The SIMD matmuls then get one row per 32-bit lane of a 256-bit (512-bit) register straight
// from maddubs/madd or vpdpbusd, with no horizontal sums, and apply the rows' scales with one vector multiply
// (kernels/avx2/matmul_int4x8.cc, avx512/matmul_int4x16.cc). Same size as its plain blocks, so a row-major matrix
// of groups has the same row_bytes, and row o (o a multiple of the group) starts where it did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_q4_0.h"

namespace pagoda::quant {

template <int64_t kRows>
struct BlockQ4_0Rows {
  static constexpr int64_t kNumRows = kRows;
  static constexpr int64_t kNumValues = 32;  // columns per block, as BlockQ4_0
  uint16_t d[kNumRows];                      // fp16 scale of each row
  // Word L (0..3, 4 kRows bytes each), byte 4r + j (r < kRows, j < 4) = row r's BlockQ4_0::qs[4L + j]: its low
  // nibble is row r's element 4L + j, its high nibble element 16 + 4L + j; value = (nibble - 8) * d[r].
  uint8_t qs[kNumRows * kNumValues / 2];
};
using BlockQ4_0x8 = BlockQ4_0Rows<8>;
using BlockQ4_0x16 = BlockQ4_0Rows<16>;
static_assert(sizeof(BlockQ4_0x8) == 8 * sizeof(BlockQ4_0), "a group is as big as its eight plain blocks");
static_assert(sizeof(BlockQ4_0x16) == 16 * sizeof(BlockQ4_0), "a group is as big as its sixteen plain blocks");
static_assert(std::is_standard_layout_v<BlockQ4_0x16> && std::is_trivially_copyable_v<BlockQ4_0x16>);

// src: Q4_0 [num_rows, num_blocks] row-major -> dst: [num_rows / R, num_blocks] groups; num_rows a multiple of R.
void repack_q4_0x8(const BlockQ4_0* src, BlockQ4_0x8* dst, int64_t num_rows, int64_t num_blocks);
void repack_q4_0x16(const BlockQ4_0* src, BlockQ4_0x16* dst, int64_t num_rows, int64_t num_blocks);
// Row r (< R) of one group's block, back as the plain block it came from.
BlockQ4_0 unpack_q4_0x8_row(const BlockQ4_0x8& group, int64_t r);
BlockQ4_0 unpack_q4_0x16_row(const BlockQ4_0x16& group, int64_t r);

}  // namespace pagoda::quant
