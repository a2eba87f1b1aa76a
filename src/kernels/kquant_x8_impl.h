// kquant_x8_impl: the K-quant matmuls over the 8-row interleaved layouts (quant/block_kquant_x8.h) against Q8_0
// activations, written once over a small vector abstraction V and instantiated per instruction set: V::I and V::F
// are an int32 and an f32 vector of one lane per row of V::kGroups row groups (a ymm: one group of 8 rows; a zmm:
// two groups side by side), V::dot the set's u8 x s8 dot product (acc + the four products of each 32-bit lane;
// vpdpbusd, or maddubs + madd on AVX2), V::load the 32 bytes at p of each group (groups `stride` bytes apart), and
// the handful of element-wise ops below. One 32-byte load holds four quants of each of a group's 8 rows, so each
// row's integer sum of a 32-value block builds up in its own lane; the rows' scales are one vector multiply, and
// the float steps are the scalar reference's (ref/matmul_kquant.cc), so every level gives its bits. The
// activations are packed per token group first (kernels/packed_activations.h). V256 (AVX2 intrinsics, the dot
// product left to the including file) is defined here; a 512-bit V lives with its folder.
// Include it only from an instruction set's folder: everything here is in an unnamed namespace, so each
// compilation keeps its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_kquant_x8.h"

namespace pagoda::kernels {
namespace {

// One group of 8 rows in a ymm; Dot::dot is the instruction set's u8 x s8 dot product.
template <class Dot>
struct V256 {
  using I = __m256i;
  using F = __m256;
  static constexpr int kGroups = 1;
  static I dot(I acc, I u8, I s8) { return Dot::dot(acc, u8, s8); }
  static I load(const uint8_t* p, int64_t) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static F load_ph(const uint16_t* p, int64_t) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static F load_u8_ps(const uint8_t* p, int64_t) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static I load_i8(const int8_t* p, int64_t) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static I broadcast4(const int8_t* p) {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  }
  static I set1_i8(char c) { return _mm256_set1_epi8(c); }
  static I set1_i32(int32_t v) { return _mm256_set1_epi32(v); }
  static I zero_i() { return _mm256_setzero_si256(); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I srli16(I a, int n) { return _mm256_srli_epi16(a, n); }
  static I slli16(I a, int n) { return _mm256_slli_epi16(a, n); }
  static I mullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
  static F zero_f() { return _mm256_setzero_ps(); }
  static F set1_f(float v) { return _mm256_set1_ps(v); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  // For the 4-bit codebook matmuls (codebook_x8_impl.h): a 16-byte table in every 128-bit lane, a byte lookup of
  // indices < 16, |a|, x with w's sign, and the E8M0 scales 2^(e - 128) of 8 rows (quant::mxfp4_half_scale).
  static I table16(const int8_t* t) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  static I lookup(I table, I idx) { return _mm256_shuffle_epi8(table, idx); }
  static I abs8(I a) { return _mm256_abs_epi8(a); }
  static I sign8(I x, I w) { return _mm256_sign_epi8(x, w); }
  static F half_scale_e8m0(const uint8_t* p, int64_t) {
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);  // e < 2
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
  }
};

inline constexpr int64_t kKquantPrefetchBytes = 2048;

// y[t * y_stride + 8 g + r] for r < 8, g < V::kGroups = row r of group g (num_super super-blocks, groups
// num_super apart from `groups`) . token t, t < kTokens; x: this token group's packed blocks.
template <class V, class Block, int kPack, int kTokens>
inline void kquant_groups_times_tokens(const Block* groups, const uint8_t* x, int64_t num_super, float* y,
                                       int64_t y_stride) {
  using I = typename V::I;
  using F = typename V::F;
  constexpr int64_t kBlockBytes = packed_kquant_block_bytes(kPack);
  constexpr bool kQ6 = std::is_same_v<Block, quant::BlockQ6_Kx8>;
  constexpr bool kQ5 = std::is_same_v<Block, quant::BlockQ5_Kx8>;
  const int64_t stride = num_super * int64_t(sizeof(Block));  // from a group's block to the next group's
  const I low = V::set1_i8(0x0f);
  F acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = V::zero_f();
  for (int64_t sb = 0; sb < num_super; ++sb) {
    const Block& blk = groups[sb];
    for (int g = 0; g < V::kGroups; ++g)
      for (int64_t offset = 0; offset < int64_t(sizeof(Block)); offset += 64)
        _mm_prefetch(reinterpret_cast<const char*>(&blk) + g * stride + offset + kKquantPrefetchBytes, _MM_HINT_T0);
    const F d = V::load_ph(blk.d, stride);
    for (int j = 0; j < 8; ++j, x += kBlockBytes) {
      const auto* qs = reinterpret_cast<const int8_t*>(x);
      const auto* dx = reinterpret_cast<const float*>(x + kPack * 32);
      I isum[kTokens];
      if constexpr (kQ6) {
        const auto* starts = reinterpret_cast<const int32_t*>(x + kPack * 40);
        // The block's two 16-value halves one after the other (each its own scale): the low nibbles hold the
        // first half, the high nibbles the second; the two high bits of word `word` sit at bits 2 word, 2 word + 1.
        for (int half = 0; half < 2; ++half) {
          const I h = V::load(blk.qh[j] + 32 * half, stride);
          for (int t = 0; t < kTokens; ++t) isum[t] = V::set1_i32(starts[half * kPack + t]);
#pragma GCC unroll 4
          for (int word = 0; word < 4; ++word) {
            I v = V::load(blk.ql[j] + 32 * word, stride);
            if (half == 1) v = V::srli16(v, 4);
            const I top = word == 3 ? V::srli16(h, 2) : V::slli16(h, 4 - 2 * word);
            const I q = V::or_(V::and_(v, low), V::and_(top, V::set1_i8(0x30)));
            for (int t = 0; t < kTokens; ++t)
              isum[t] = V::dot(isum[t], q, V::broadcast4(qs + 32 * t + 16 * half + 4 * word));
          }
          const I scale = V::load_i8(blk.scales[2 * j + half], stride);
          for (int t = 0; t < kTokens; ++t)
            acc[t] = V::fmadd(V::mul(d, V::set1_f(dx[t])), V::cvt(V::mullo(scale, isum[t])), acc[t]);
        }
      } else {
        const auto* xs = reinterpret_cast<const float*>(x + kPack * 36);
        for (int t = 0; t < kTokens; ++t) isum[t] = V::zero_i();
        I h = V::zero_i();
        if constexpr (kQ5) h = V::load(blk.qh[j], stride);
#pragma GCC unroll 4
        for (int word = 0; word < 4; ++word) {
          const I v = V::load(blk.qs[j] + 32 * word, stride);
          I lo = V::and_(v, low), hi = V::and_(V::srli16(v, 4), low);
          if constexpr (kQ5) {  // the fifth bits: bit `word` (low nibble's) and 4 + word (high nibble's), to bit 4
            lo = V::or_(lo, V::and_(V::slli16(h, 4 - word), V::set1_i8(0x10)));
            hi = V::or_(hi, V::and_(V::srli16(h, word), V::set1_i8(0x10)));
          }
          for (int t = 0; t < kTokens; ++t) {
            isum[t] = V::dot(isum[t], lo, V::broadcast4(qs + 32 * t + 4 * word));
            isum[t] = V::dot(isum[t], hi, V::broadcast4(qs + 32 * t + 16 + 4 * word));
          }
        }
        const F dsc = V::mul(d, V::load_u8_ps(blk.scales[j], stride));
        const F dm = V::mul(V::load_ph(blk.dmin, stride), V::load_u8_ps(blk.mins[j], stride));
        for (int t = 0; t < kTokens; ++t) {
          acc[t] = V::fmadd(V::mul(dsc, V::set1_f(dx[t])), V::cvt(isum[t]), acc[t]);
          acc[t] = V::fnmadd(dm, V::set1_f(xs[t]), acc[t]);
        }
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) V::store(y + t * y_stride, acc[t]);
}

// The whole product: row groups in units of V::kGroups (an odd one left over runs through Tail, a one-group V of
// the same instruction set), kPack tokens per pass.
template <class V, class Tail, int kPack, class Block>
void kquant_x8_matmul_xq(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride) {
  check_kquant_shape(num_out, num_in, quant::kX8Rows);
  const int64_t num_super = num_in / quant::kQK_K, num_blocks = num_in / quant::BlockQ8_0::kNumValues;
  const int64_t num_groups = num_out / quant::kX8Rows;
  const auto* groups = static_cast<const Block*>(w);
  const uint8_t* packed = pack_kquant_activations(xq, num_tokens, num_blocks, kPack);
  const int64_t num_units = (num_groups + V::kGroups - 1) / V::kGroups;
  for_each_row_and_token_group<kPack>(
      V::kGroups * num_super * int64_t(sizeof(Block)), num_units, num_tokens, [&]<int kTokens>(int64_t u, int64_t t) {
        const int64_t g = V::kGroups * u;
        const uint8_t* x = packed + t / kPack * num_blocks * packed_kquant_block_bytes(kPack);
        float* y_unit = y + t * y_stride + quant::kX8Rows * g;
        if (g + V::kGroups <= num_groups)
          kquant_groups_times_tokens<V, Block, kPack, kTokens>(groups + g * num_super, x, num_super, y_unit, y_stride);
        else
          kquant_groups_times_tokens<Tail, Block, kPack, kTokens>(groups + g * num_super, x, num_super, y_unit,
                                                                  y_stride);
      });
}

}  // namespace
}  // namespace pagoda::kernels

// A level's six entry points (matmul_q4_Kx8, _q5_Kx8, _q6_Kx8 from f32 activations, and their _q8_0 twins from
// quantized ones), defined in the including file's namespace: V and TAIL its vectors (type names: alias a template
// first), TOKENS its token group, QUANTIZE its quantize_row_q8_0.
#define PAGODA_KQUANT_X8_ENTRY(name, Block, V, TAIL, TOKENS, QUANTIZE)                                              \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    kquant_x8_matmul_xq<V, TAIL, TOKENS, quant::Block>(                                                             \
        w, quantize_activations_q8_0(QUANTIZE, x, num_in, num_tokens), y, num_out, num_in, num_tokens, num_out);    \
  }                                                                                                                  \
  void matmul_##name##_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,    \
                            int64_t num_tokens, int64_t y_stride) {                                                  \
    kquant_x8_matmul_xq<V, TAIL, TOKENS, quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);            \
  }
#define PAGODA_KQUANT_X8_ENTRY_POINTS(V, TAIL, TOKENS, QUANTIZE)       \
  PAGODA_KQUANT_X8_ENTRY(q4_Kx8, BlockQ4_Kx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_KQUANT_X8_ENTRY(q5_Kx8, BlockQ5_Kx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_KQUANT_X8_ENTRY(q6_Kx8, BlockQ6_Kx8, V, TAIL, TOKENS, QUANTIZE)
