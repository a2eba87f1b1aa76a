// BlockIQ4_NLx8, BlockIQ4_XSx8, BlockMXFP4x8: eight rows' 4-bit codebook blocks (quant/block_iq4_mxfp4.h) of the
// same columns, interleaved as the K-quant x8 groups are (quant/block_kquant_x8.h: one 32-byte word holds four
// quants of each row of a 32-value block), with IQ4_XS's 6-bit sub-block scales unpacked to one signed byte per row
// (ls - 32). An in-memory layout made at load time, never written to a file. Also one 32-value block decoded to its
// integers and f32 scale (DecodedCodebookBlock), the one description of what a block holds that the repacking, the
// reference kernels and the tests share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_iq4_mxfp4.h"
#include "quant/block_kquant_x8.h"

namespace pagoda::quant {

// Value i of a 32-value block = scale * levels[i], exactly: IQ4_NL's scale is its fp16 d and its levels
// kIq4NlLevels[nibble]; IQ4_XS's scale is d * (ls - 32) for the sub-block (exact in f32), the same levels; MXFP4's
// scale is mxfp4_half_scale(e) and its levels kE2M1Doubled[nibble].
struct DecodedCodebookBlock {
  float scale = 0.0f;
  int8_t levels[32] = {};
};

// Word L (< 4) of a group's 32-value block is 32 bytes; byte 4r + k (r < 8, k < 4) holds row r's nibbles of values
// 4L + k (low) and 16 + 4L + k (high), which is byte 4L + k of the row's own 16 bytes of quants.
struct BlockIQ4_NLx8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int64_t kNumBlocks = 1;  // 32-value blocks per group block
  uint16_t d[kX8Rows];                      // fp16, per row
  uint8_t qs[1][128];
};
struct BlockIQ4_XSx8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int64_t kNumBlocks = 8;
  uint16_t d[kX8Rows];
  int8_t scales[8][kX8Rows];  // [block j][row]: ls - 32, -32..31
  uint8_t qs[8][128];
};
struct BlockMXFP4x8 {
  static constexpr int64_t kNumRows = kX8Rows;
  static constexpr int64_t kNumBlocks = 1;
  uint8_t e[kX8Rows];  // E8M0, per row
  uint8_t qs[1][128];
};
static_assert(sizeof(BlockIQ4_NLx8) == 8 * 18 && sizeof(BlockIQ4_XSx8) == 8 * 138 && sizeof(BlockMXFP4x8) == 8 * 17);
static_assert(std::is_trivially_copyable_v<BlockIQ4_NLx8> && std::is_trivially_copyable_v<BlockIQ4_XSx8> &&
              std::is_trivially_copyable_v<BlockMXFP4x8>);

// Block j (< 8 for IQ4_XS, 0 otherwise) of a stored block, decoded.
void decode_codebook_block(const BlockIQ4_NL& b, int64_t j, DecodedCodebookBlock& out);
void decode_codebook_block(const BlockIQ4_XS& b, int64_t j, DecodedCodebookBlock& out);
void decode_codebook_block(const BlockMXFP4& b, int64_t j, DecodedCodebookBlock& out);
// Row r (< 8) of a group's block j, decoded.
void decode_codebook_block(const BlockIQ4_NLx8& g, int64_t r, int64_t j, DecodedCodebookBlock& out);
void decode_codebook_block(const BlockIQ4_XSx8& g, int64_t r, int64_t j, DecodedCodebookBlock& out);
void decode_codebook_block(const BlockMXFP4x8& g, int64_t r, int64_t j, DecodedCodebookBlock& out);

// src: [num_rows, num_blocks] stored blocks row-major -> dst: [num_rows / 8, num_blocks] groups; num_rows a multiple
// of 8 (checked). The bytes move unchanged but for IQ4_XS's scales, so repacking loses nothing.
void repack_iq4_nlx8(const BlockIQ4_NL* src, BlockIQ4_NLx8* dst, int64_t num_rows, int64_t num_blocks);
void repack_iq4_xsx8(const BlockIQ4_XS* src, BlockIQ4_XSx8* dst, int64_t num_rows, int64_t num_blocks);
void repack_mxfp4x8(const BlockMXFP4* src, BlockMXFP4x8* dst, int64_t num_rows, int64_t num_blocks);

}  // namespace pagoda::quant
