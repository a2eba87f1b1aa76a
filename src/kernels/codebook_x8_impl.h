// codebook_x8_impl: the 4-bit codebook matmuls (IQ4_NL, IQ4_XS, MXFP4) over their 8-row interleaved layouts
// (quant/block_iq4_x8.h), IQ4_NL and MXFP4 against Q8_0 activations and IQ4_XS against q8_K ones (as ggml's
// vec_dot_iq4_xs_q8_K), written once over kernels/kquant_x8_impl.h's vector abstraction V as the bodies of
// kernels/x8_matmul_driver.h's loop, and instantiated per instruction set. The quant words are laid out as the
// K-quants' are, so one 32-byte load holds four quants of each of a group's 8 rows; a byte shuffle (V::lookup) turns
// the nibbles into the codebook's signed levels (kIq4NlLevels or kE2M1Doubled), and the signed x signed dot product
// is the set's u8 x s8 one on |level| and the activation with the level's sign (V::abs8, V::sign8): exact for
// activations in [-127, 127], which is all quantize_row_q8_0 and quantize_row_q8_K write. Each row's integer sum of a
// 32-value block builds up in its own lane; IQ4_XS multiplies those by its integer sub-block scales over the whole
// super-block; the float steps are the scalar reference's (ref/matmul_codebook.cc), so every level gives its bits.
// Include it only from an instruction set's folder, after kquant_x8_impl.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/kquant_x8_impl.h"
#include "quant/block_iq4_x8.h"

namespace pagoda::kernels {
namespace {

// The integer sum of a group's 32-value block j (its 8 rows, one per lane) times each token's 32 activations at
// qs + t * token_step, added to isum.
template <class V, int kTokens, class Block>
inline void codebook_block_sums(const Block& blk, int j, const int8_t* qs, int64_t token_step, int64_t stride,
                                typename V::I* isum) {
  using I = typename V::I;
  constexpr bool kMxfp4 = std::is_same_v<Block, quant::BlockMXFP4x8>;
  const I low = V::set1_i8(0x0f);
  const I table = V::table16(kMxfp4 ? quant::kE2M1Doubled : quant::kIq4NlLevels);
#pragma GCC unroll 4
  for (int word = 0; word < 4; ++word) {
    const I v = V::load(blk.qs[j] + 32 * word, stride);
    const I lo = V::lookup(table, V::and_(v, low)), hi = V::lookup(table, V::and_(V::srli16(v, 4), low));
    const I lo_abs = V::abs8(lo), hi_abs = V::abs8(hi);
    for (int t = 0; t < kTokens; ++t) {
      isum[t] = V::dot(isum[t], lo_abs, V::sign8(V::broadcast4(qs + token_step * t + 4 * word), lo));
      isum[t] = V::dot(isum[t], hi_abs, V::sign8(V::broadcast4(qs + token_step * t + 16 + 4 * word), hi));
    }
  }
}

// IQ4_NL and MXFP4: one scale per 32 values, against Q8_0 activations.
template <class Block>
struct CodebookBody {
  static constexpr bool kMxfp4 = std::is_same_v<Block, quant::BlockMXFP4x8>;
  using Activations = quant::BlockQ8_0;
  static void check_shape(int64_t num_out, int64_t num_in) {
    check_codebook_shape(num_out, num_in, 32 * Block::kNumBlocks, quant::kX8Rows);
  }
  static const uint8_t* pack(const quant::BlockQ8_0* xq, int64_t num_tokens, int64_t num_units, int64_t group) {
    return pack_q8_codebook_activations(xq, num_tokens, num_units * Block::kNumBlocks, group);
  }
  static constexpr int64_t unit_bytes(int64_t group) { return Block::kNumBlocks * packed_q8_codebook_block_bytes(group); }
  template <class V, int kPack, int kTokens>
  static void unit(const Block& blk, const uint8_t* x, int64_t stride, typename V::F* acc) {
    typename V::F d = V::zero_f();
    if constexpr (!kMxfp4) d = V::load_ph(blk.d, stride);
    for (int j = 0; j < Block::kNumBlocks; ++j, x += packed_q8_codebook_block_bytes(kPack))
      block<V, kPack, kTokens>(blk, d, j, x, stride, acc);
  }
  // Block j's 32 values of the 8 rows times each token's packed Q8_0 block x (qs, then d), into acc.
  template <class V, int kPack, int kTokens>
  static void block(const Block& blk, typename V::F d, int j, const uint8_t* x, int64_t stride, typename V::F* acc) {
    using I = typename V::I;
    using F = typename V::F;
    const auto* qs = reinterpret_cast<const int8_t*>(x);
    const auto* dx = reinterpret_cast<const float*>(x + kPack * 32);
    I isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = V::zero_i();
    codebook_block_sums<V, kTokens>(blk, j, qs, 32, stride, isum);
    F scale = d;
    if constexpr (kMxfp4) scale = V::half_scale_e8m0(blk.e, stride);
    for (int t = 0; t < kTokens; ++t) acc[t] = V::fmadd(V::mul(scale, V::set1_f(dx[t])), V::cvt(isum[t]), acc[t]);
  }
};

// IQ4_XS: a super-block of eight 32-value blocks against q8_K activations (packed as the K-quants'), the signed
// sub-block scales ls - 32 applied in int32 (|sum| < 8 * 32 * 32 * 127 * 127 < 2^31), one float step per super-block.
struct Iq4XsBody : Q8KUnits {
  using Block = quant::BlockIQ4_XSx8;
  static void check_shape(int64_t num_out, int64_t num_in) {
    check_codebook_shape(num_out, num_in, 32 * Block::kNumBlocks, quant::kX8Rows);
  }
  template <class V, int kPack, int kTokens>
  static void unit(const Block& blk, const uint8_t* packed, int64_t stride, typename V::F* acc) {
    using I = typename V::I;
    const PackedQ8K<kPack> x(packed);
    I isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = V::zero_i();
    for (int j = 0; j < Block::kNumBlocks; ++j) {
      I part[kTokens];
      for (int t = 0; t < kTokens; ++t) part[t] = V::zero_i();
      codebook_block_sums<V, kTokens>(blk, j, x.block(j, 0), 32, stride, part);
      const I sc = V::load_i8(blk.scales[j], stride);
      for (int t = 0; t < kTokens; ++t) isum[t] = V::add(isum[t], V::mullo(sc, part[t]));
    }
    const typename V::F d = V::load_ph(blk.d, stride);
    for (int t = 0; t < kTokens; ++t) acc[t] = V::fmadd(V::mul(d, V::set1_f(x.d[t])), V::cvt(isum[t]), acc[t]);
  }
};

template <>
struct X8Body<quant::BlockIQ4_NLx8> : CodebookBody<quant::BlockIQ4_NLx8> {};
template <>
struct X8Body<quant::BlockIQ4_XSx8> : Iq4XsBody {};
template <>
struct X8Body<quant::BlockMXFP4x8> : CodebookBody<quant::BlockMXFP4x8> {};

}  // namespace
}  // namespace pagoda::kernels

// A level's six entry points (matmul_iq4_nlx8, _iq4_xsx8, _mxfp4x8 from f32 activations, quantized by QUANTIZE_Q8_0
// or, IQ4_XS's, QUANTIZE_Q8_K, and their _q8_0 or _q8_K twins), as PAGODA_KQUANT_X8_ENTRY_POINTS defines the
// K-quants'.
#define PAGODA_CODEBOOK_X8_ENTRY_POINTS(V, TAIL, TOKENS, QUANTIZE_Q8_0, QUANTIZE_Q8_K) \
  PAGODA_X8_ENTRY(iq4_nlx8, q8_0, BlockIQ4_NLx8, V, TAIL, TOKENS, QUANTIZE_Q8_0)       \
  PAGODA_X8_ENTRY(iq4_xsx8, q8_K, BlockIQ4_XSx8, V, TAIL, TOKENS, QUANTIZE_Q8_K)       \
  PAGODA_X8_ENTRY(mxfp4x8, q8_0, BlockMXFP4x8, V, TAIL, TOKENS, QUANTIZE_Q8_0)
