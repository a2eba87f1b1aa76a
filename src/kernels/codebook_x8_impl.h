// codebook_x8_impl: the 4-bit codebook matmuls (IQ4_NL, IQ4_XS, MXFP4) over their 8-row interleaved layouts
// (quant/block_iq4_x8.h) against Q8_0 activations, written once over kernels/kquant_x8_impl.h's vector abstraction
// V and instantiated per instruction set. The quant words are laid out as the K-quants' are, so one 32-byte load
// holds four quants of each of a group's 8 rows; a byte shuffle (V::lookup) turns the nibbles into the codebook's
// signed levels (kIq4NlLevels or kE2M1Doubled), and the signed x signed dot product is the set's u8 x s8 one on
// |level| and the activation with the level's sign (V::abs8, V::sign8): exact for activations in [-127, 127], which
// is all quantize_row_q8_0 writes. Each row's integer sum of a 32-value block builds up in its own lane; the float
// steps are the scalar reference's (ref/matmul_codebook.cc), so every level gives its bits.
// Include it only from an instruction set's folder, after kquant_x8_impl.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/kquant_x8_impl.h"
#include "quant/block_iq4_x8.h"

namespace pagoda::kernels {
namespace {

// y[t * y_stride + 8 g + r] for r < 8, g < V::kGroups = row r of group g (num_units group blocks, groups num_units
// apart from `groups`) . token t, t < kTokens; x: this token group's packed blocks.
template <class V, class Block, int kPack, int kTokens>
inline void codebook_groups_times_tokens(const Block* groups, const uint8_t* x, int64_t num_units, float* y,
                                         int64_t y_stride) {
  using I = typename V::I;
  using F = typename V::F;
  constexpr int64_t kBlockBytes = packed_kquant_block_bytes(kPack);
  constexpr bool kMxfp4 = std::is_same_v<Block, quant::BlockMXFP4x8>;
  constexpr bool kSubScales = std::is_same_v<Block, quant::BlockIQ4_XSx8>;
  const int64_t stride = num_units * int64_t(sizeof(Block));  // from a group's block to the next group's
  const I low = V::set1_i8(0x0f);
  const I table = V::table16(kMxfp4 ? quant::kE2M1Doubled : quant::kIq4NlLevels);
  F acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = V::zero_f();
  for (int64_t u = 0; u < num_units; ++u) {
    const Block& blk = groups[u];
    for (int g = 0; g < V::kGroups; ++g)
      for (int64_t offset = 0; offset < int64_t(sizeof(Block)); offset += 64)
        _mm_prefetch(reinterpret_cast<const char*>(&blk) + g * stride + offset + kKquantPrefetchBytes, _MM_HINT_T0);
    F d = V::zero_f();
    if constexpr (!kMxfp4) d = V::load_ph(blk.d, stride);
    for (int j = 0; j < Block::kNumBlocks; ++j, x += kBlockBytes) {
      const auto* qs = reinterpret_cast<const int8_t*>(x);
      const auto* dx = reinterpret_cast<const float*>(x + kPack * 32);
      I isum[kTokens];
      for (int t = 0; t < kTokens; ++t) isum[t] = V::zero_i();
#pragma GCC unroll 4
      for (int word = 0; word < 4; ++word) {
        const I v = V::load(blk.qs[j] + 32 * word, stride);
        const I lo = V::lookup(table, V::and_(v, low)), hi = V::lookup(table, V::and_(V::srli16(v, 4), low));
        const I lo_abs = V::abs8(lo), hi_abs = V::abs8(hi);
        for (int t = 0; t < kTokens; ++t) {
          isum[t] = V::dot(isum[t], lo_abs, V::sign8(V::broadcast4(qs + 32 * t + 4 * word), lo));
          isum[t] = V::dot(isum[t], hi_abs, V::sign8(V::broadcast4(qs + 32 * t + 16 + 4 * word), hi));
        }
      }
      F scale = d;
      if constexpr (kMxfp4) scale = V::half_scale_e8m0(blk.e, stride);
      if constexpr (kSubScales) scale = V::mul(d, V::cvt(V::load_i8(blk.scales[j], stride)));
      for (int t = 0; t < kTokens; ++t) acc[t] = V::fmadd(V::mul(scale, V::set1_f(dx[t])), V::cvt(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) V::store(y + t * y_stride, acc[t]);
}

// The whole product: row groups in units of V::kGroups (an odd one left over runs through Tail), kPack tokens per
// pass.
template <class V, class Tail, int kPack, class Block>
void codebook_x8_matmul_xq(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                           int64_t num_tokens, int64_t y_stride) {
  constexpr int64_t kValues = 32 * Block::kNumBlocks;
  check_codebook_shape(num_out, num_in, kValues, quant::kX8Rows);
  const int64_t num_units = num_in / kValues, num_blocks = num_in / quant::BlockQ8_0::kNumValues;
  const int64_t num_groups = num_out / quant::kX8Rows;
  const auto* groups = static_cast<const Block*>(w);
  const uint8_t* packed = pack_kquant_activations(xq, num_tokens, num_blocks, kPack);
  const int64_t num_pairs = (num_groups + V::kGroups - 1) / V::kGroups;
  for_each_row_and_token_group<kPack>(
      V::kGroups * num_units * int64_t(sizeof(Block)), num_pairs, num_tokens, [&]<int kTokens>(int64_t p, int64_t t) {
        const int64_t g = V::kGroups * p;
        const uint8_t* x = packed + t / kPack * num_blocks * packed_kquant_block_bytes(kPack);
        float* y_unit = y + t * y_stride + quant::kX8Rows * g;
        if (g + V::kGroups <= num_groups)
          codebook_groups_times_tokens<V, Block, kPack, kTokens>(groups + g * num_units, x, num_units, y_unit,
                                                                 y_stride);
        else
          codebook_groups_times_tokens<Tail, Block, kPack, kTokens>(groups + g * num_units, x, num_units, y_unit,
                                                                    y_stride);
      });
}

}  // namespace
}  // namespace pagoda::kernels

// A level's six entry points (matmul_iq4_nlx8, _iq4_xsx8, _mxfp4x8 from f32 activations, and their _q8_0 twins),
// as PAGODA_KQUANT_X8_ENTRY_POINTS defines the K-quants'.
#define PAGODA_CODEBOOK_X8_ENTRY(name, Block, V, TAIL, TOKENS, QUANTIZE)                                             \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    codebook_x8_matmul_xq<V, TAIL, TOKENS, quant::Block>(                                                            \
        w, quantize_activations_q8_0(QUANTIZE, x, num_in, num_tokens), y, num_out, num_in, num_tokens, num_out);     \
  }                                                                                                                  \
  void matmul_##name##_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,    \
                            int64_t num_tokens, int64_t y_stride) {                                                  \
    codebook_x8_matmul_xq<V, TAIL, TOKENS, quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);           \
  }
#define PAGODA_CODEBOOK_X8_ENTRY_POINTS(V, TAIL, TOKENS, QUANTIZE)             \
  PAGODA_CODEBOOK_X8_ENTRY(iq4_nlx8, BlockIQ4_NLx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_CODEBOOK_X8_ENTRY(iq4_xsx8, BlockIQ4_XSx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_CODEBOOK_X8_ENTRY(mxfp4x8, BlockMXFP4x8, V, TAIL, TOKENS, QUANTIZE)
