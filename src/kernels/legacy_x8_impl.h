// legacy_x8_impl: ggml's Q4_1 and Q5_1 matmuls over their 8-row interleaved layouts (quant/block_legacy_x8.h)
// against Q8_0 activations, written once over kernels/kquant_x8_impl.h's vector abstraction V as the bodies of
// kernels/x8_matmul_driver.h's loop, and instantiated per instruction set. One 32-byte load holds four quants of
// each of a group's 8 rows; the quants are unsigned (0..15, or 0..31 with Q5_1's fifth bit, put in place as Q5_K's
// are), so they are the u8 operand of the set's dot product as they are, and each row's integer sum(q x) builds up
// in its own lane. The minimum's term m d_x sum(x) takes the activation block's integer sum, packed beside it
// (kernels/packed_activations.h, start values of scale 1). The float steps are the scalar reference's
// (ref/matmul_legacy.cc), so every level gives its bits. Include it only from an instruction set's folder, after
// kquant_x8_impl.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/kquant_x8_impl.h"
#include "quant/block_legacy_x8.h"

namespace pagoda::kernels {
namespace {

template <class Block>
struct AffineBody {
  static constexpr bool kQ5 = std::is_same_v<Block, quant::BlockQ5_1x8>;
  using Activations = quant::BlockQ8_0;
  static void check_shape(int64_t num_out, int64_t num_in) { check_codebook_shape(num_out, num_in, 32, quant::kX8Rows); }
  static const uint8_t* pack(const quant::BlockQ8_0* xq, int64_t num_tokens, int64_t num_units, int64_t group) {
    return pack_q8_activations(xq, num_tokens, num_units, group, 1);
  }
  static constexpr int64_t unit_bytes(int64_t group) { return packed_q8_block_bytes(group); }
  // The block's 32 values of the 8 rows (of each of V's groups) times each token's packed Q8_0 block x (qs, d, then
  // the sum of its values), into acc.
  template <class V, int kPack, int kTokens>
  static void unit(const Block& blk, const uint8_t* x, int64_t stride, typename V::F* acc) {
    using I = typename V::I;
    using F = typename V::F;
    const auto* qs = reinterpret_cast<const int8_t*>(x);
    const auto* dx = reinterpret_cast<const float*>(x + kPack * 32);
    const auto* xsum = reinterpret_cast<const int32_t*>(x + kPack * 36);
    const I low = V::set1_i8(0x0f);
    I isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = V::zero_i();
    I h = V::zero_i();
    if constexpr (kQ5) h = V::load(blk.qh[0], stride);
#pragma GCC unroll 4
    for (int word = 0; word < 4; ++word) {
      const I v = V::load(blk.qs[0] + 32 * word, stride);
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
    const F d = V::load_ph(blk.d, stride), m = V::load_ph(blk.m, stride);
    for (int t = 0; t < kTokens; ++t) {
      acc[t] = V::fmadd(V::mul(d, V::set1_f(dx[t])), V::cvt(isum[t]), acc[t]);
      acc[t] = V::fmadd(m, V::set1_f(dx[t] * float(xsum[t])), acc[t]);
    }
  }
};

template <>
struct X8Body<quant::BlockQ4_1x8> : AffineBody<quant::BlockQ4_1x8> {};
template <>
struct X8Body<quant::BlockQ5_1x8> : AffineBody<quant::BlockQ5_1x8> {};

}  // namespace
}  // namespace pagoda::kernels

// A level's four entry points (matmul_q4_1x8, _q5_1x8 from f32 activations, quantized by QUANTIZE_Q8_0, and their
// _q8_0 twins), as PAGODA_CODEBOOK_X8_ENTRY_POINTS defines the codebook types'.
#define PAGODA_LEGACY_X8_ENTRY_POINTS(V, TAIL, TOKENS, QUANTIZE_Q8_0)          \
  PAGODA_X8_ENTRY(q4_1x8, q8_0, BlockQ4_1x8, V, TAIL, TOKENS, QUANTIZE_Q8_0) \
  PAGODA_X8_ENTRY(q5_1x8, q8_0, BlockQ5_1x8, V, TAIL, TOKENS, QUANTIZE_Q8_0)
