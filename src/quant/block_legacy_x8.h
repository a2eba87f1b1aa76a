// BlockQ4_1x8, BlockQ5_1x8: eight rows' ggml Q4_1 / Q5_1 blocks (quant/block_legacy_quants.h) of the same 32
// columns, interleaved as the K-quant x8 groups are (quant/block_kquant_x8.h: one 32-byte word holds four quants of
// each row), Q5_1's fifth bits regrouped as Q5_Kx8's are, so the SIMD kernels (kernels/legacy_x8_impl.h) read a
// row's quants into its own 32-bit lane with no horizontal sums. An in-memory layout made at load time, never written
// to a file; the bytes of each row are the stored block's, moved, so repacking loses nothing and a group is as big
// as its eight plain blocks. Also one 32-value block decoded to its integers and fp16 scale and minimum
// (DecodedAffineBlock), the one description of what a block holds that the repacking, the reference kernels and the
// tests share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_kquant_x8.h"
#include "quant/block_legacy_quants.h"

namespace pagoda::quant {

// Value i of a block = q[i] * d + m (d, m fp16; q[i] 0..15 for Q4_1, 0..31 for Q5_1).
struct DecodedAffineBlock {
  uint16_t d = 0;
  uint16_t m = 0;
  uint8_t q[32] = {};
};

// Word L (< 4) of the quants is 32 bytes; byte 4r + k (r < 8, k < 4) holds row r's nibbles of values 4L + k (low)
// and 16 + 4L + k (high), which is byte 4L + k of the row's own 16 bytes of quants.
struct BlockQ4_1x8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int64_t kNumBlocks = 1;  // 32-value blocks per group block
  uint16_t d[kX8Rows];                      // fp16, per row
  uint16_t m[kX8Rows];                      // fp16, per row
  uint8_t qs[1][128];
};
// Q5_1: the fifth bits, byte 4r + k: bit L is value 4L + k's, bit 4 + L value 16 + 4L + k's (as BlockQ5_Kx8's qh).
struct BlockQ5_1x8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int64_t kNumBlocks = 1;
  uint16_t d[kX8Rows];
  uint16_t m[kX8Rows];
  uint8_t qh[1][32];
  uint8_t qs[1][128];
};
static_assert(sizeof(BlockQ4_1x8) == 8 * sizeof(BlockQ4_1) && sizeof(BlockQ5_1x8) == 8 * sizeof(BlockQ5_1));
static_assert(std::is_trivially_copyable_v<BlockQ4_1x8> && std::is_trivially_copyable_v<BlockQ5_1x8>);

// A stored block, decoded.
void decode_affine_block(const BlockQ4_1& b, DecodedAffineBlock& out);
void decode_affine_block(const BlockQ5_1& b, DecodedAffineBlock& out);
// Row r (< 8) of a group's block, decoded.
void decode_affine_block(const BlockQ4_1x8& g, int64_t r, DecodedAffineBlock& out);
void decode_affine_block(const BlockQ5_1x8& g, int64_t r, DecodedAffineBlock& out);

// src: [num_rows, num_blocks] stored blocks row-major -> dst: [num_rows / 8, num_blocks] groups; num_rows a multiple
// of 8 (checked).
void repack_q4_1x8(const BlockQ4_1* src, BlockQ4_1x8* dst, int64_t num_rows, int64_t num_blocks);
void repack_q5_1x8(const BlockQ5_1* src, BlockQ5_1x8* dst, int64_t num_rows, int64_t num_blocks);

}  // namespace pagoda::quant
