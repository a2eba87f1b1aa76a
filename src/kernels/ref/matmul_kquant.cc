// Scalar references for the K-quant matmuls (Q2_K ... Q6_K as a GGUF stores them, pagoda's Q7_K carrier, and their
// 8-row interleaved copies, quant/block_kquant_x8.h) against q8_K activations (quant/block_q8_K.h), as ggml's vec_dot_q*_K_q8_K do:
// the weight's integer sub-block scales are applied in int32, one float step per super-block. Both layouts decode a
// super-block to the same integers (quant::DecodedSuperBlock), so they give the same bits, and so does every SIMD
// level (kernels/kquant_x8_impl.h): per row and super-block, in super-block order, with x the token's q8_K block
// (d_x, q_x, bsums),
//   Q4_K, Q5_K: isum = sum_j sc_j sum_32(q q_x), msum = sum_j m_j (bsums_2j + bsums_2j+1)          (j < 8)
//   Q2_K:       isum = sum_k sc_k sum_16(q q_x), msum = sum_k m_k bsums_k                          (k < 16)
//   Q6_K, Q3_K, Q7_K: isum = sum_k sc_k (sum_16(q q_x) - z bsums_k), msum = 0 (z = 32 for Q6_K, 4 for Q3_K, 64
//                     for Q7_K)
// all exact in int32, then acc = fma(d * d_x, float(isum), acc) and, with mins, acc = fma(-(dmin * d_x),
// float(msum), acc), every product rounded to f32 before it is used.
#include <cmath>
#include <type_traits>

#include "core/half.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_kquant_x8.h"

namespace pagoda::kernels::ref {
namespace {

using quant::BlockQ8_K;
using quant::DecodedSuperBlock;
using quant::kQK_K;

// The integer sums of one decoded super-block against one q8_K block.
struct SuperBlockSums {
  int32_t isum = 0, msum = 0;
};

SuperBlockSums sums_with_mins(const DecodedSuperBlock& s, const BlockQ8_K& x) {
  SuperBlockSums r;
  for (int64_t j = 0; j < 8; ++j) {
    int32_t part = 0;
    for (int64_t i = 32 * j; i < 32 * j + 32; ++i) part += int32_t(s.q[i]) * x.qs[i];
    r.isum += int32_t(s.scales[j]) * part;
    r.msum += int32_t(s.mins[j]) * (int32_t(x.bsums[2 * j]) + x.bsums[2 * j + 1]);
  }
  return r;
}

// Per 16 values: Q2_K's scale and min, or Q6_K's and Q3_K's signed scale with their quants' offset.
SuperBlockSums sums_per_16(const DecodedSuperBlock& s, const BlockQ8_K& x, int32_t offset, bool mins) {
  SuperBlockSums r;
  for (int64_t k = 0; k < 16; ++k) {
    int32_t part = 0;
    for (int64_t i = 16 * k; i < 16 * k + 16; ++i) part += int32_t(s.q[i]) * x.qs[i];
    r.isum += int32_t(s.scales[k]) * (part - offset * x.bsums[k]);
    if (mins) r.msum += int32_t(s.mins[k]) * x.bsums[k];
  }
  return r;
}

template <class Block, class A, class B>
constexpr bool kIs = std::is_same_v<Block, A> || std::is_same_v<Block, B>;

template <class Block>
float super_block(const DecodedSuperBlock& s, const BlockQ8_K& x, float acc) {
  constexpr bool kQ6 = kIs<Block, quant::BlockQ6_K, quant::BlockQ6_Kx8>;
  constexpr bool kQ3 = kIs<Block, quant::BlockQ3_K, quant::BlockQ3_Kx8>;
  constexpr bool kQ2 = kIs<Block, quant::BlockQ2_K, quant::BlockQ2_Kx8>;
  constexpr bool kQ7 = kIs<Block, quant::BlockQ7_K, quant::BlockQ7_Kx8>;
  SuperBlockSums r;
  if constexpr (kQ7)
    r = sums_per_16(s, x, quant::kQ7Offset, false);
  else if constexpr (kQ6)
    r = sums_per_16(s, x, 32, false);
  else if constexpr (kQ3)
    r = sums_per_16(s, x, 4, false);
  else if constexpr (kQ2)
    r = sums_per_16(s, x, 0, true);
  else
    r = sums_with_mins(s, x);
  acc = std::fma(fp16_to_float(s.d) * x.d, float(r.isum), acc);
  if constexpr (!kQ6 && !kQ3 && !kQ7) acc = std::fma(-(fp16_to_float(s.dmin) * x.d), float(r.msum), acc);
  return acc;
}

// Row o's super-block b, decoded: plain blocks row-major, or row o % 8 of group o / 8.
template <class Block>
void decode(const Block* w, int64_t o, int64_t b, int64_t num_super, DecodedSuperBlock& s) {
  if constexpr (requires { Block::kNumRows; })
    quant::decode_super_block(w[o / Block::kNumRows * num_super + b], o % Block::kNumRows, s);
  else
    quant::decode_super_block(w[o * num_super + b], s);
}

template <class Block>
void matmul_xq(const void* w, const BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_kquant_shape(
      num_out, num_in, requires { Block::kNumRows; } ? quant::kX8Rows : 1);
  const int64_t num_super = num_in / kQK_K;
  const auto* blocks = static_cast<const Block*>(w);
  DecodedSuperBlock s;
  for (int64_t o = 0; o < num_out; ++o)
    for (int64_t t = 0; t < num_tokens; ++t) {
      float acc = 0.0f;
      for (int64_t b = 0; b < num_super; ++b) {
        decode(blocks, o, b, num_super, s);
        acc = super_block<Block>(s, xq[t * num_super + b], acc);
      }
      y[t * y_stride + o] = acc;
    }
}

template <class Block>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_xq<Block>(w, quantize_activations_q8_K(quant::quantize_row_q8_K, x, num_in, num_tokens), y, num_out, num_in,
                   num_tokens, num_out);
}

}  // namespace

#define PAGODA_REF_KQUANT(name, Block)                                                                               \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    matmul_f32_in<quant::Block>(w, x, y, num_out, num_in, num_tokens);                                               \
  }                                                                                                                  \
  void matmul_##name##_q8_K(const void* w, const BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,           \
                            int64_t num_tokens, int64_t y_stride) {                                                  \
    matmul_xq<quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);                                        \
  }
PAGODA_REF_KQUANT(q2_K, BlockQ2_K)
PAGODA_REF_KQUANT(q3_K, BlockQ3_K)
PAGODA_REF_KQUANT(q2_Kx8, BlockQ2_Kx8)
PAGODA_REF_KQUANT(q3_Kx8, BlockQ3_Kx8)
PAGODA_REF_KQUANT(q4_K, BlockQ4_K)
PAGODA_REF_KQUANT(q5_K, BlockQ5_K)
PAGODA_REF_KQUANT(q6_K, BlockQ6_K)
PAGODA_REF_KQUANT(q4_Kx8, BlockQ4_Kx8)
PAGODA_REF_KQUANT(q5_Kx8, BlockQ5_Kx8)
PAGODA_REF_KQUANT(q6_Kx8, BlockQ6_Kx8)
PAGODA_REF_KQUANT(q7_K, BlockQ7_K)
PAGODA_REF_KQUANT(q7_Kx8, BlockQ7_Kx8)
#undef PAGODA_REF_KQUANT

}  // namespace pagoda::kernels::ref
