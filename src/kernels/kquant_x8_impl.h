// kquant_x8_impl: the K-quant matmuls (Q2_K ... Q6_K, and pagoda's Q7_K carrier) over the 8-row interleaved layouts
// (quant/block_kquant_x8.h) against q8_K activations (quant/block_q8_K.h, packed by kernels/packed_activations.h),
// the bodies of kernels/x8_matmul_driver.h's loop, written once over a small vector abstraction V and instantiated
// per instruction set: V::I and V::F are an int32 and an f32 vector of one lane per row of V::kGroups row groups (a
// ymm: one group of 8 rows; a zmm: two groups side by side), V::dot the set's
// u8 x s8 dot product (acc + the four products of each 32-bit lane; vpdpbusd, or maddubs + madd on AVX2), V::load the
// 32 bytes at p of each group (groups `stride` bytes apart), and the handful of element-wise ops below. One 32-byte
// load holds four quants of each of a group's 8 rows, so each row's integer sum of a sub-block builds up in its own
// lane; the rows' integer sub-block scales and mins multiply those sums in int32 over the whole super-block, and
// one or two float steps per super-block (the scalar reference's, ref/matmul_kquant.cc) scale it, so every level
// gives its bits. The 2-bit types (Q2_K, Q3_K) shift and mask four quants of each row out of one byte lane per step;
// Q7_K's quants are whole bytes, loaded as they are.
// V256 (AVX2 intrinsics, the dot product left to the including file) is defined here, as is the 4-bit codebook
// matmuls' (codebook_x8_impl.h) use of it; a 512-bit V lives with its folder. Include it only from an instruction
// set's folder: everything here is in an unnamed namespace, so each compilation keeps its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/x8_matmul_driver.h"
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
  static I load_u8(const uint8_t* p, int64_t) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
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
  static I srli32(I a, int n) { return _mm256_srli_epi32(a, n); }
  static I mullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
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

// Where one token group's packed q8_K super-block keeps its parts (kernels/packed_activations.h).
template <int kPack>
struct PackedQ8K {
  const int8_t* qs;      // block j, token t: qs + (j * kPack + t) * 32
  const float* d;        // d[t]
  const int32_t* bsums;  // bsums[k * kPack + t]
  explicit PackedQ8K(const uint8_t* x)
      : qs(reinterpret_cast<const int8_t*>(x)),
        d(reinterpret_cast<const float*>(x + kPack * 256)),
        bsums(reinterpret_cast<const int32_t*>(x + kPack * 260)) {}
  const int8_t* block(int j, int t) const { return qs + (j * kPack + t) * 32; }
  int32_t bsum(int k, int t) const { return bsums[k * kPack + t]; }
};

// Q4_K and Q5_K: a scale and a min per 32 values.
template <class Block>
struct KquantMinsBody {
  static constexpr bool kQ5 = std::is_same_v<Block, quant::BlockQ5_Kx8>;
  template <class V, int kPack, int kTokens>
  static void super_block(const Block& blk, const uint8_t* packed, int64_t stride, typename V::F* acc) {
    using I = typename V::I;
    const PackedQ8K<kPack> x(packed);
    const I low = V::set1_i8(0x0f);
    I isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = V::zero_i();
    for (int j = 0; j < 8; ++j) {
      I part[kTokens];
      for (int t = 0; t < kTokens; ++t) part[t] = V::zero_i();
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
          part[t] = V::dot(part[t], lo, V::broadcast4(x.block(j, t) + 4 * word));
          part[t] = V::dot(part[t], hi, V::broadcast4(x.block(j, t) + 16 + 4 * word));
        }
      }
      const I sc = V::load_u8(blk.scales[j], stride);
      for (int t = 0; t < kTokens; ++t) isum[t] = V::add(isum[t], V::mullo(sc, part[t]));
    }
    I msum[kTokens];
    for (int t = 0; t < kTokens; ++t) msum[t] = V::zero_i();
    for (int j = 0; j < 8; ++j) {
      const I m = V::load_u8(blk.mins[j], stride);
      for (int t = 0; t < kTokens; ++t)
        msum[t] = V::add(msum[t], V::mullo(m, V::set1_i32(x.bsum(2 * j, t) + x.bsum(2 * j + 1, t))));
    }
    const typename V::F d = V::load_ph(blk.d, stride), dmin = V::load_ph(blk.dmin, stride);
    for (int t = 0; t < kTokens; ++t) {
      const typename V::F dx = V::set1_f(x.d[t]);
      acc[t] = V::fmadd(V::mul(d, dx), V::cvt(isum[t]), acc[t]);
      acc[t] = V::fnmadd(V::mul(dmin, dx), V::cvt(msum[t]), acc[t]);
    }
  }
};

// Q6_K, Q3_K, Q2_K and Q7_K: a scale per 16 values, so each 32-value block runs as two halves; Q6_K's offset of 32,
// Q3_K's of 4 and Q7_K's of 64 start each half's integer sum (-z times the half's bsum), Q2_K's mins are a second
// integer sum. Q7_K's byte quants stay below 128, so maddubs's pair sums (at most 2 x 127 x 128) cannot saturate.
template <class Block>
struct KquantSub16Body {
  static constexpr bool kQ6 = std::is_same_v<Block, quant::BlockQ6_Kx8>;
  static constexpr bool kQ3 = std::is_same_v<Block, quant::BlockQ3_Kx8>;
  static constexpr bool kQ2 = std::is_same_v<Block, quant::BlockQ2_Kx8>;
  static constexpr bool kQ7 = std::is_same_v<Block, quant::BlockQ7_Kx8>;
  template <class V, int kPack, int kTokens>
  static void super_block(const Block& blk, const uint8_t* packed, int64_t stride, typename V::F* acc) {
    using I = typename V::I;
    const PackedQ8K<kPack> x(packed);
    I isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = V::zero_i();
    for (int j = 0; j < 8; ++j) {
      I w0 = V::zero_i(), w1 = V::zero_i(), h3 = V::zero_i();
      if constexpr (kQ2 || kQ3) {
        w0 = V::load(blk.qs[j], stride);
        w1 = V::load(blk.qs[j] + 32, stride);
      }
      if constexpr (kQ3) h3 = V::load(blk.qh[j], stride);
      for (int half = 0; half < 2; ++half) {
        const int k = 2 * j + half;
        I part[kTokens];
        for (int t = 0; t < kTokens; ++t) {
          if constexpr (kQ6) part[t] = V::set1_i32(-32 * x.bsum(k, t));
          if constexpr (kQ3) part[t] = V::set1_i32(-4 * x.bsum(k, t));
          if constexpr (kQ7) part[t] = V::set1_i32(-quant::kQ7Offset * x.bsum(k, t));
          if constexpr (kQ2) part[t] = V::zero_i();
        }
        I h6 = V::zero_i();
        if constexpr (kQ6) h6 = V::load(blk.qh[j] + 32 * half, stride);
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {  // values 16 half + 4c .. + 3 of each row
          I q;
          if constexpr (kQ7) {
            q = V::load(blk.qs[j] + 32 * (4 * half + c), stride);
          } else if constexpr (kQ6) {
            // The low nibbles hold the first half, the high nibbles the second; the two high bits of word c sit at
            // bits 2c, 2c + 1.
            I v = V::load(blk.ql[j] + 32 * c, stride);
            if (half == 1) v = V::srli16(v, 4);
            const I top = c == 3 ? V::srli16(h6, 2) : V::slli16(h6, 4 - 2 * c);
            q = V::or_(V::and_(v, V::set1_i8(0x0f)), V::and_(top, V::set1_i8(0x30)));
          } else {
            // Bit pair p = 2 half + c / 2 of word c % 2; Q3_K's third bit is bit b = 2p + c % 2 of its word, to bit 2.
            const int p = 2 * half + c / 2, b = 2 * p + c % 2;
            q = V::and_(V::srli16(c % 2 ? w1 : w0, 2 * p), V::set1_i8(0x03));
            if constexpr (kQ3) {
              const I top = b >= 2 ? V::srli16(h3, b - 2) : V::slli16(h3, 2 - b);
              q = V::or_(q, V::and_(top, V::set1_i8(0x04)));
            }
          }
          for (int t = 0; t < kTokens; ++t)
            part[t] = V::dot(part[t], q, V::broadcast4(x.block(j, t) + 16 * half + 4 * c));
        }
        I scale;
        if constexpr (kQ2)
          scale = V::and_(V::load_u8(blk.scales[k], stride), V::set1_i32(15));
        else
          scale = V::load_i8(blk.scales[k], stride);
        for (int t = 0; t < kTokens; ++t) isum[t] = V::add(isum[t], V::mullo(scale, part[t]));
      }
    }
    const typename V::F d = V::load_ph(blk.d, stride);
    for (int t = 0; t < kTokens; ++t) acc[t] = V::fmadd(V::mul(d, V::set1_f(x.d[t])), V::cvt(isum[t]), acc[t]);
    if constexpr (kQ2) {
      I msum[kTokens];
      for (int t = 0; t < kTokens; ++t) msum[t] = V::zero_i();
      for (int k = 0; k < 16; ++k) {
        const I m = V::srli32(V::load_u8(blk.scales[k], stride), 4);
        for (int t = 0; t < kTokens; ++t) msum[t] = V::add(msum[t], V::mullo(m, V::set1_i32(x.bsum(k, t))));
      }
      const typename V::F dmin = V::load_ph(blk.dmin, stride);
      for (int t = 0; t < kTokens; ++t)
        acc[t] = V::fnmadd(V::mul(dmin, V::set1_f(x.d[t])), V::cvt(msum[t]), acc[t]);
    }
  }
};

// What x8_matmul_driver.h's loop needs of a body over q8_K activations (the K-quants', codebook_x8_impl.h's IQ4_XS):
// the activations packed one unit per 256-value super-block.
struct Q8KUnits {
  using Activations = quant::BlockQ8_K;
  static const uint8_t* pack(const quant::BlockQ8_K* xq, int64_t num_tokens, int64_t num_units, int64_t group) {
    return pack_q8_K_activations(xq, num_tokens, num_units, group);
  }
  static constexpr int64_t unit_bytes(int64_t group) { return packed_q8_K_unit_bytes(group); }
};

// A K-quant block's body for that loop: its shape check and its super-block as the unit.
template <class Body>
struct KquantX8Body : Body, Q8KUnits {
  static void check_shape(int64_t num_out, int64_t num_in) { check_kquant_shape(num_out, num_in, quant::kX8Rows); }
  template <class V, int kPack, int kTokens>
  static void unit(const auto& blk, const uint8_t* x, int64_t stride, typename V::F* acc) {
    Body::template super_block<V, kPack, kTokens>(blk, x, stride, acc);
  }
};

template <>
struct X8Body<quant::BlockQ2_Kx8> : KquantX8Body<KquantSub16Body<quant::BlockQ2_Kx8>> {};
template <>
struct X8Body<quant::BlockQ3_Kx8> : KquantX8Body<KquantSub16Body<quant::BlockQ3_Kx8>> {};
template <>
struct X8Body<quant::BlockQ4_Kx8> : KquantX8Body<KquantMinsBody<quant::BlockQ4_Kx8>> {};
template <>
struct X8Body<quant::BlockQ5_Kx8> : KquantX8Body<KquantMinsBody<quant::BlockQ5_Kx8>> {};
template <>
struct X8Body<quant::BlockQ6_Kx8> : KquantX8Body<KquantSub16Body<quant::BlockQ6_Kx8>> {};
template <>
struct X8Body<quant::BlockQ7_Kx8> : KquantX8Body<KquantSub16Body<quant::BlockQ7_Kx8>> {};

}  // namespace
}  // namespace pagoda::kernels

// A level's twelve entry points (matmul_q2_Kx8 ... _q7_Kx8 from f32 activations, quantized to q8_K by QUANTIZE, and
// their _q8_K twins from quantized ones), defined in the including file's namespace: V and TAIL its vectors, TOKENS
// its token group.
#define PAGODA_KQUANT_X8_ENTRY_POINTS(V, TAIL, TOKENS, QUANTIZE)          \
  PAGODA_X8_ENTRY(q2_Kx8, q8_K, BlockQ2_Kx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_X8_ENTRY(q3_Kx8, q8_K, BlockQ3_Kx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_X8_ENTRY(q4_Kx8, q8_K, BlockQ4_Kx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_X8_ENTRY(q5_Kx8, q8_K, BlockQ5_Kx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_X8_ENTRY(q6_Kx8, q8_K, BlockQ6_Kx8, V, TAIL, TOKENS, QUANTIZE) \
  PAGODA_X8_ENTRY(q7_Kx8, q8_K, BlockQ7_Kx8, V, TAIL, TOKENS, QUANTIZE)
