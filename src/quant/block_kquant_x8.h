// BlockQ2_Kx8 ... BlockQ6_Kx8: eight rows' K-quant super-blocks (quant/block_kquants.h) of the same 256
// columns, interleaved so that one 32-byte load holds four quants of each row of one 32-value block, as
// BlockQ4_0x8 does (an in-memory layout made at load time, never written to a file), with the 6-bit scales and mins
// unpacked to one byte per row (Q2_K's 4-bit scale and min pairs kept as one byte). The SIMD matmuls then get one row
// per 32-bit lane straight from vpdpbusd (maddubs
// + madd on AVX2) and scale the rows with one vector multiply (kernels/kquant_x8_impl.h). Also the super-block's
// quants and scales decoded to plain integers (DecodedSuperBlock), the one description of what a block holds that
// the repacking, the reference kernels and the tests share. Also pagoda's own Q7_K carrier (quant/block_q7_k.h),
// whose quants are whole bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_kquants.h"
#include "quant/block_q7_k.h"

namespace pagoda::quant {

// A K-quant super-block's integers: value i = d * scale(i) * q[i] - dmin * min(i) (Q4_K, Q5_K: scale and min per
// 32 values, scales[i / 32] and mins[i / 32]; Q2_K: per 16 values, scales[i / 16] and mins[i / 16]), or
// d * scales[i / 16] * (q[i] - 32) (Q6_K), or d * scales[i / 16] * (q[i] - 4) (Q3_K), or d * scales[i / 16] *
// (q[i] - 64) (Q7_K).
struct DecodedSuperBlock {
  uint16_t d = 0;          // fp16
  uint16_t dmin = 0;       // fp16 (Q2_K, Q4_K, Q5_K)
  uint8_t q[kQK_K] = {};   // 0..3 (Q2_K), 0..7 (Q3_K), 0..15 (Q4_K), 0..31 (Q5_K), 0..63 (Q6_K), 0..127 (Q7_K)
  int8_t scales[16] = {};  // Q4_K, Q5_K: the first 8, 0..63; Q6_K, Q7_K: all 16; Q3_K: all 16, -32..31; Q2_K: 0..15
  uint8_t mins[16] = {};   // Q4_K, Q5_K: the first 8, 0..63; Q2_K: all 16, 0..15
};
void decode_super_block(const BlockQ2_K& b, DecodedSuperBlock& out);
void decode_super_block(const BlockQ3_K& b, DecodedSuperBlock& out);
void decode_super_block(const BlockQ4_K& b, DecodedSuperBlock& out);
void decode_super_block(const BlockQ5_K& b, DecodedSuperBlock& out);
void decode_super_block(const BlockQ6_K& b, DecodedSuperBlock& out);
void decode_super_block(const BlockQ7_K& b, DecodedSuperBlock& out);

// The quant bytes of one 32-value block j (< 8) of eight rows: word L (< 4) is 32 bytes, byte 4r + k (r < 8, k < 4)
// holding row r's value 32j + 4L + k in its low nibble and value 32j + 16 + 4L + k in its high nibble (the low 4
// bits, for Q5_K and Q6_K).
inline constexpr int64_t kX8Rows = 8;

struct BlockQ4_Kx8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int kNumBlocks = 8;  // 32-value blocks
  uint16_t d[kX8Rows];                  // fp16, per row
  uint16_t dmin[kX8Rows];               // fp16, per row
  uint8_t scales[8][kX8Rows];           // [block j][row]
  uint8_t mins[8][kX8Rows];
  uint8_t qs[8][128];  // [block j]: four 32-byte words as above
};
// Q5_K: the fifth bits of block j, byte 4r + k: bit L is value 32j + 4L + k's, bit 4 + L value 32j + 16 + 4L + k's.
struct BlockQ5_Kx8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int kNumBlocks = 8;
  uint16_t d[kX8Rows];
  uint16_t dmin[kX8Rows];
  uint8_t scales[8][kX8Rows];
  uint8_t mins[8][kX8Rows];
  uint8_t qs[8][128];
  uint8_t qh[8][32];
};
// Q6_K: scales per 16 values and row; the two high bits of block j in two 32-byte words h (< 2), byte 4r + k bits
// 2L, 2L + 1 are those of value 32j + 16h + 4L + k.
struct BlockQ6_Kx8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int kNumBlocks = 8;
  uint16_t d[kX8Rows];
  int8_t scales[16][kX8Rows];  // [16-value block][row]
  uint8_t ql[8][128];
  uint8_t qh[8][64];
};
// The 2-bit quants of Q2_K and Q3_K: block j in two 32-byte words L (< 2), byte 4r + k bits 2p, 2p + 1 (p < 4)
// holding row r's value 32j + 8p + 4L + k, so that one shift and mask gives four values of each row.
// Q2_K: the scale (low nibble) and min (high nibble) bytes of the file, per 16-value block and row.
struct BlockQ2_Kx8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int kNumBlocks = 8;
  uint16_t d[kX8Rows];
  uint16_t dmin[kX8Rows];
  uint8_t scales[16][kX8Rows];  // [16-value block][row]
  uint8_t qs[8][64];
};
// Q3_K: the scales unpacked to signed bytes (-32..31), and the third bits of block j in one 32-byte word, byte
// 4r + k bit b (< 8) that of value 32j + 4b + k.
struct BlockQ3_Kx8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int kNumBlocks = 8;
  uint16_t d[kX8Rows];
  int8_t scales[16][kX8Rows];
  uint8_t qs[8][64];
  uint8_t qh[8][32];
};
// Q7_K: the quants of block j as bytes in eight 32-byte words w (< 8), byte 4r + k the quant of row r's value
// 32j + 4w + k (words 0..3 the first 16-value half, 4..7 the second).
struct BlockQ7_Kx8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int kNumBlocks = 8;
  uint16_t d[kX8Rows];
  int8_t scales[16][kX8Rows];  // [16-value block][row]
  uint8_t qs[8][256];
};
static_assert(sizeof(BlockQ7_Kx8) == 8 * sizeof(BlockQ7_K) && std::is_trivially_copyable_v<BlockQ7_Kx8>);
static_assert(sizeof(BlockQ4_Kx8) == 8 * 148 && sizeof(BlockQ5_Kx8) == 8 * 180 && sizeof(BlockQ6_Kx8) == 8 * 210);
static_assert(sizeof(BlockQ2_Kx8) == 8 * 84 && sizeof(BlockQ3_Kx8) == 8 * 114);
static_assert(std::is_trivially_copyable_v<BlockQ4_Kx8> && std::is_trivially_copyable_v<BlockQ5_Kx8> &&
              std::is_trivially_copyable_v<BlockQ6_Kx8> && std::is_trivially_copyable_v<BlockQ2_Kx8> &&
              std::is_trivially_copyable_v<BlockQ3_Kx8>);

// src: [num_rows, num_blocks] super-blocks row-major -> dst: [num_rows / 8, num_blocks] groups; num_rows a multiple
// of 8 (checked).
void repack_q2_Kx8(const BlockQ2_K* src, BlockQ2_Kx8* dst, int64_t num_rows, int64_t num_blocks);
void repack_q3_Kx8(const BlockQ3_K* src, BlockQ3_Kx8* dst, int64_t num_rows, int64_t num_blocks);
void repack_q4_Kx8(const BlockQ4_K* src, BlockQ4_Kx8* dst, int64_t num_rows, int64_t num_blocks);
void repack_q5_Kx8(const BlockQ5_K* src, BlockQ5_Kx8* dst, int64_t num_rows, int64_t num_blocks);
void repack_q6_Kx8(const BlockQ6_K* src, BlockQ6_Kx8* dst, int64_t num_rows, int64_t num_blocks);
void repack_q7_Kx8(const BlockQ7_K* src, BlockQ7_Kx8* dst, int64_t num_rows, int64_t num_blocks);
// Row r (< 8) of one group's super-block, decoded.
void decode_super_block(const BlockQ2_Kx8& group, int64_t r, DecodedSuperBlock& out);
void decode_super_block(const BlockQ3_Kx8& group, int64_t r, DecodedSuperBlock& out);
void decode_super_block(const BlockQ4_Kx8& group, int64_t r, DecodedSuperBlock& out);
void decode_super_block(const BlockQ5_Kx8& group, int64_t r, DecodedSuperBlock& out);
void decode_super_block(const BlockQ6_Kx8& group, int64_t r, DecodedSuperBlock& out);
void decode_super_block(const BlockQ7_Kx8& group, int64_t r, DecodedSuperBlock& out);

}  // namespace pagoda::quant
