// kquant_x8_impl: the K-quant matmuls over the 8-row interleaved layouts (quant/block_kquant_x8.h) against Q8_0
// activations, written once and instantiated per instruction set with that set's u8 x s8 dot product (Ops::dot: acc
// + the four products of each 32-bit lane; vpdpbusd, or maddubs + madd on AVX2) and token group (Ops::kTokenGroup).
// One 32-byte load holds four quants of each of the 8 rows, so each row's integer sum of a 32-value block builds up
// in its own lane; the rows' scales are one vector multiply, and the float steps are the scalar reference's
// (ref/matmul_kquant.cc), so every level gives its bits. The activations are packed per token group first
// (kernels/packed_activations.h).
// Include it only from an instruction set's folder, with Ops of internal linkage: everything here is in an unnamed
// namespace, so each compilation keeps its own copy.
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

inline __m256i kq_broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Row r's 8 unsigned bytes at p (one per row), as f32 lanes.
inline __m256 kq_u8_to_ps(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Q5_K's fifth bit of word `word`'s low (value 4 word + k) and high (16 + 4 word + k) nibbles, at bit 4.
inline __m256i kq_fifth_bit_low(__m256i h, int word) {
  return _mm256_and_si256(_mm256_slli_epi16(h, 4 - word), _mm256_set1_epi8(0x10));
}
inline __m256i kq_fifth_bit_high(__m256i h, int word) {
  return _mm256_and_si256(_mm256_srli_epi16(h, word), _mm256_set1_epi8(0x10));
}
// Q6_K's two high bits of word `word` (bits 2 word, 2 word + 1 of each byte), at bits 4 and 5.
inline __m256i kq_top_bits(__m256i h, int word) {
  const __m256i mask = _mm256_set1_epi8(0x30);
  switch (word) {
    case 0: return _mm256_and_si256(_mm256_slli_epi16(h, 4), mask);
    case 1: return _mm256_and_si256(_mm256_slli_epi16(h, 2), mask);
    case 2: return _mm256_and_si256(h, mask);
    default: return _mm256_and_si256(_mm256_srli_epi16(h, 2), mask);
  }
}

inline constexpr int64_t kKquantPrefetchBytes = 2048;

// y[t * y_stride + r] for r < 8 = row r of `group` (num_super super-blocks) . token t, t < kTokens; x: this token
// group's packed blocks.
template <class Ops, class Block, int kPack, int kTokens>
inline void kquant_group_times_tokens(const Block* group, const uint8_t* x, int64_t num_super, float* y,
                                      int64_t y_stride) {
  constexpr int64_t kBlockBytes = packed_kquant_block_bytes(kPack);
  constexpr bool kQ6 = std::is_same_v<Block, quant::BlockQ6_Kx8>;
  constexpr bool kQ5 = std::is_same_v<Block, quant::BlockQ5_Kx8>;
  const __m256i low = _mm256_set1_epi8(0x0f);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < num_super; ++sb) {
    const Block& blk = group[sb];
    for (int64_t offset = 0; offset < int64_t(sizeof(Block)); offset += 64)
      _mm_prefetch(reinterpret_cast<const char*>(&blk) + offset + kKquantPrefetchBytes, _MM_HINT_T0);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
    for (int j = 0; j < 8; ++j, x += kBlockBytes) {
      const auto* qs = reinterpret_cast<const int8_t*>(x);
      const auto* dx = reinterpret_cast<const float*>(x + kPack * 32);
      __m256i isum[kTokens];
      if constexpr (kQ6) {
        const auto* starts = reinterpret_cast<const int32_t*>(x + kPack * 40);
        // The block's two 16-value halves one after the other (each its own scale): the low nibbles hold the
        // first half, the high nibbles the second.
        for (int half = 0; half < 2; ++half) {
          const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh[j] + 32 * half));
          for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_set1_epi32(starts[half * kPack + t]);
#pragma GCC unroll 4
          for (int word = 0; word < 4; ++word) {
            __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.ql[j] + 32 * word));
            if (half == 1) v = _mm256_srli_epi16(v, 4);
            const __m256i q = _mm256_or_si256(_mm256_and_si256(v, low), kq_top_bits(h, word));
            for (int t = 0; t < kTokens; ++t)
              isum[t] = Ops::dot(isum[t], q, kq_broadcast4(qs + 32 * t + 16 * half + 4 * word));
          }
          const __m256i scale =
              _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.scales[2 * j + half])));
          for (int t = 0; t < kTokens; ++t) {
            const __m256 ddx = _mm256_mul_ps(d, _mm256_set1_ps(dx[t]));
            acc[t] = _mm256_fmadd_ps(ddx, _mm256_cvtepi32_ps(_mm256_mullo_epi32(scale, isum[t])), acc[t]);
          }
        }
      } else {
        const auto* xs = reinterpret_cast<const float*>(x + kPack * 36);
        for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_setzero_si256();
        __m256i h = _mm256_setzero_si256();
        if constexpr (kQ5) h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh[j]));
#pragma GCC unroll 4
        for (int word = 0; word < 4; ++word) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs[j] + 32 * word));
          __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
          if constexpr (kQ5) {
            lo = _mm256_or_si256(lo, kq_fifth_bit_low(h, word));
            hi = _mm256_or_si256(hi, kq_fifth_bit_high(h, word));
          }
          for (int t = 0; t < kTokens; ++t) {
            isum[t] = Ops::dot(isum[t], lo, kq_broadcast4(qs + 32 * t + 4 * word));
            isum[t] = Ops::dot(isum[t], hi, kq_broadcast4(qs + 32 * t + 16 + 4 * word));
          }
        }
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.dmin)));
        const __m256 dsc = _mm256_mul_ps(d, kq_u8_to_ps(blk.scales[j]));
        const __m256 dm = _mm256_mul_ps(dmin, kq_u8_to_ps(blk.mins[j]));
        for (int t = 0; t < kTokens; ++t) {
          acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dsc, _mm256_set1_ps(dx[t])), _mm256_cvtepi32_ps(isum[t]), acc[t]);
          acc[t] = _mm256_fnmadd_ps(dm, _mm256_set1_ps(xs[t]), acc[t]);
        }
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

template <class Ops, class Block>
void kquant_x8_matmul_xq(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride) {
  constexpr int kPack = Ops::kTokenGroup;
  check_kquant_shape(num_out, num_in, quant::kX8Rows);
  const int64_t num_super = num_in / quant::kQK_K, num_blocks = num_in / quant::BlockQ8_0::kNumValues;
  const auto* groups = static_cast<const Block*>(w);
  const uint8_t* packed = pack_kquant_activations(xq, num_tokens, num_blocks, kPack);
  for_each_row_and_token_group<kPack>(
      num_super * int64_t(sizeof(Block)), num_out / quant::kX8Rows, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        kquant_group_times_tokens<Ops, Block, kPack, kTokens>(
            groups + g * num_super, packed + t / kPack * num_blocks * packed_kquant_block_bytes(kPack), num_super,
            y + t * y_stride + quant::kX8Rows * g, y_stride);
      });
}

}  // namespace
}  // namespace pagoda::kernels
