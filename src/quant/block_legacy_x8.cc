// Decoding Q4_1/Q5_1 blocks to integers, and repacking rows of them into 8-row groups: the fp16 scales, minimums and
// quant bytes are copied, Q5_1's fifth bits regrouped per quant byte.
#include "quant/block_legacy_x8.h"

#include <cstring>

#include "core/check.h"

namespace pagoda::quant {
namespace {

// The 32 4-bit quants of 16 bytes laid out as a stored block's.
void affine_nibbles(const uint8_t* qs, uint8_t* q) {
  for (int i = 0; i < 16; ++i) {
    q[i] = qs[i] & 15;
    q[i + 16] = qs[i] >> 4;
  }
}

uint32_t affine_qh_bits(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Row r's 16 quant bytes of a group's block, and back.
void get_affine_quants(const uint8_t* words, int64_t r, uint8_t* qs) {
  for (int word = 0; word < 4; ++word) std::memcpy(qs + 4 * word, words + 32 * word + 4 * r, 4);
}
void put_affine_quants(const uint8_t* qs, int64_t r, uint8_t* words) {
  for (int word = 0; word < 4; ++word) std::memcpy(words + 32 * word + 4 * r, qs + 4 * word, 4);
}

void pack_affine_row(const BlockQ4_1& b, int64_t r, BlockQ4_1x8& g) {
  g.d[r] = b.d;
  g.m[r] = b.m;
  put_affine_quants(b.qs, r, g.qs[0]);
}
void pack_affine_row(const BlockQ5_1& b, int64_t r, BlockQ5_1x8& g) {
  g.d[r] = b.d;
  g.m[r] = b.m;
  put_affine_quants(b.qs, r, g.qs[0]);
  const uint32_t qh = affine_qh_bits(b.qh);
  for (int k = 0; k < 4; ++k) {
    uint8_t bits = 0;
    for (int word = 0; word < 4; ++word) {
      bits |= uint8_t(((qh >> (4 * word + k)) & 1) << word);
      bits |= uint8_t(((qh >> (16 + 4 * word + k)) & 1) << (4 + word));
    }
    g.qh[0][4 * r + k] = bits;
  }
}

template <class Plain, class Group>
void repack_affine(const Plain* src, Group* dst, int64_t num_rows, int64_t num_blocks) {
  PAGODA_CHECK(num_rows % kX8Rows == 0, "repacking Q4_1/Q5_1 blocks needs whole groups of {} rows, got {}", kX8Rows,
               num_rows);
  for (int64_t g = 0; g < num_rows / kX8Rows; ++g)
    for (int64_t b = 0; b < num_blocks; ++b)
      for (int64_t r = 0; r < kX8Rows; ++r) pack_affine_row(src[(g * kX8Rows + r) * num_blocks + b], r, dst[g * num_blocks + b]);
}

}  // namespace

void decode_affine_block(const BlockQ4_1& b, DecodedAffineBlock& out) {
  out.d = b.d;
  out.m = b.m;
  affine_nibbles(b.qs, out.q);
}

void decode_affine_block(const BlockQ5_1& b, DecodedAffineBlock& out) {
  out.d = b.d;
  out.m = b.m;
  affine_nibbles(b.qs, out.q);
  const uint32_t qh = affine_qh_bits(b.qh);
  for (int i = 0; i < 32; ++i) out.q[i] |= uint8_t(((qh >> i) & 1) << 4);
}

void decode_affine_block(const BlockQ4_1x8& g, int64_t r, DecodedAffineBlock& out) {
  uint8_t qs[16];
  get_affine_quants(g.qs[0], r, qs);
  out.d = g.d[r];
  out.m = g.m[r];
  affine_nibbles(qs, out.q);
}

void decode_affine_block(const BlockQ5_1x8& g, int64_t r, DecodedAffineBlock& out) {
  uint8_t qs[16];
  get_affine_quants(g.qs[0], r, qs);
  out.d = g.d[r];
  out.m = g.m[r];
  affine_nibbles(qs, out.q);
  for (int k = 0; k < 4; ++k) {
    const uint8_t bits = g.qh[0][4 * r + k];
    for (int word = 0; word < 4; ++word) {
      out.q[4 * word + k] |= uint8_t(((bits >> word) & 1) << 4);
      out.q[16 + 4 * word + k] |= uint8_t(((bits >> (4 + word)) & 1) << 4);
    }
  }
}

void repack_q4_1x8(const BlockQ4_1* src, BlockQ4_1x8* dst, int64_t num_rows, int64_t num_blocks) {
  repack_affine(src, dst, num_rows, num_blocks);
}
void repack_q5_1x8(const BlockQ5_1* src, BlockQ5_1x8* dst, int64_t num_rows, int64_t num_blocks) {
  repack_affine(src, dst, num_rows, num_blocks);
}

}  // namespace pagoda::quant
