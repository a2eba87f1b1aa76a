// Decoding 4-bit codebook blocks to integers and a scale, and repacking rows of them into 8-row groups: the
// quant bytes and fp16/E8M0 scales are copied, IQ4_XS's 6-bit sub-block scales unpacked.
#include "quant/block_iq4_x8.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {
namespace {

// The 32 levels of a block whose 16 quant bytes are laid out as a stored block's.
void codebook_levels(const uint8_t* qs, const int8_t* table, DecodedCodebookBlock& out) {
  for (int i = 0; i < 16; ++i) {
    out.levels[i] = table[qs[i] & 15];
    out.levels[i + 16] = table[qs[i] >> 4];
  }
}

// Row r's 16 quant bytes of a group's block (the inverse of put_quants).
void get_codebook_quants(const uint8_t* words, int64_t r, uint8_t* qs) {
  for (int word = 0; word < 4; ++word) std::memcpy(qs + 4 * word, words + 32 * word + 4 * r, 4);
}
void put_codebook_quants(const uint8_t* qs, int64_t r, uint8_t* words) {
  for (int word = 0; word < 4; ++word) std::memcpy(words + 32 * word + 4 * r, qs + 4 * word, 4);
}

int iq4_xs_sub_scale(const BlockIQ4_XS& b, int64_t j) {
  return int((b.scales_l[j / 2] >> (4 * (j % 2))) & 15) | int((b.scales_h >> (2 * j)) & 3) << 4;
}

void pack_codebook_row(const BlockIQ4_NL& b, int64_t r, BlockIQ4_NLx8& g) {
  g.d[r] = b.d;
  put_codebook_quants(b.qs, r, g.qs[0]);
}
void pack_codebook_row(const BlockIQ4_XS& b, int64_t r, BlockIQ4_XSx8& g) {
  g.d[r] = b.d;
  for (int64_t j = 0; j < 8; ++j) {
    g.scales[j][r] = int8_t(iq4_xs_sub_scale(b, j) - 32);
    put_codebook_quants(b.qs + 16 * j, r, g.qs[j]);
  }
}
void pack_codebook_row(const BlockMXFP4& b, int64_t r, BlockMXFP4x8& g) {
  g.e[r] = b.e;
  put_codebook_quants(b.qs, r, g.qs[0]);
}

template <class Plain, class Group>
void repack_codebook(const Plain* src, Group* dst, int64_t num_rows, int64_t num_blocks) {
  PAGODA_CHECK(num_rows % kX8Rows == 0, "repacking 4-bit codebook blocks needs whole groups of {} rows, got {}",
               kX8Rows, num_rows);
  for (int64_t g = 0; g < num_rows / kX8Rows; ++g)
    for (int64_t b = 0; b < num_blocks; ++b)
      for (int64_t r = 0; r < kX8Rows; ++r)
        pack_codebook_row(src[(g * kX8Rows + r) * num_blocks + b], r, dst[g * num_blocks + b]);
}

}  // namespace

void decode_codebook_block(const BlockIQ4_NL& b, int64_t, DecodedCodebookBlock& out) {
  out.scale = fp16_to_float(b.d);
  codebook_levels(b.qs, kIq4NlLevels, out);
}
void decode_codebook_block(const BlockIQ4_XS& b, int64_t j, DecodedCodebookBlock& out) {
  out.scale = fp16_to_float(b.d) * float(iq4_xs_sub_scale(b, j) - 32);
  codebook_levels(b.qs + 16 * j, kIq4NlLevels, out);
}
void decode_codebook_block(const BlockMXFP4& b, int64_t, DecodedCodebookBlock& out) {
  out.scale = mxfp4_half_scale(b.e);
  codebook_levels(b.qs, kE2M1Doubled, out);
}

void decode_codebook_block(const BlockIQ4_NLx8& g, int64_t r, int64_t, DecodedCodebookBlock& out) {
  uint8_t qs[16];
  get_codebook_quants(g.qs[0], r, qs);
  out.scale = fp16_to_float(g.d[r]);
  codebook_levels(qs, kIq4NlLevels, out);
}
void decode_codebook_block(const BlockIQ4_XSx8& g, int64_t r, int64_t j, DecodedCodebookBlock& out) {
  uint8_t qs[16];
  get_codebook_quants(g.qs[j], r, qs);
  out.scale = fp16_to_float(g.d[r]) * float(g.scales[j][r]);
  codebook_levels(qs, kIq4NlLevels, out);
}
void decode_codebook_block(const BlockMXFP4x8& g, int64_t r, int64_t, DecodedCodebookBlock& out) {
  uint8_t qs[16];
  get_codebook_quants(g.qs[0], r, qs);
  out.scale = mxfp4_half_scale(g.e[r]);
  codebook_levels(qs, kE2M1Doubled, out);
}

void repack_iq4_nlx8(const BlockIQ4_NL* src, BlockIQ4_NLx8* dst, int64_t num_rows, int64_t num_blocks) {
  repack_codebook(src, dst, num_rows, num_blocks);
}
void repack_iq4_xsx8(const BlockIQ4_XS* src, BlockIQ4_XSx8* dst, int64_t num_rows, int64_t num_blocks) {
  repack_codebook(src, dst, num_rows, num_blocks);
}
void repack_mxfp4x8(const BlockMXFP4* src, BlockMXFP4x8* dst, int64_t num_rows, int64_t num_blocks) {
  repack_codebook(src, dst, num_rows, num_blocks);
}

}  // namespace pagoda::quant
