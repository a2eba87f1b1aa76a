// Scalar references for the K-quant matmuls (Q2_K ... Q6_K as a GGUF stores them, and their 8-row interleaved
// copies, quant/block_kquant_x8.h) against Q8_0 activations. Both layouts decode a super-block to the same integers
// (quant::DecodedSuperBlock), so they give the same bits, and so does every SIMD level (kernels/kquant_x8_impl.h):
// per row and 32-value activation block j, in block order,
//   Q4_K, Q5_K: isum = sum(q x), then acc = fma(d * sc_j * d_x, isum, acc), acc = fma(-(dmin * m_j), d_x * sum(x), acc)
//   Q6_K, Q3_K: per 16-value half h of the block, isum = sc_2j+h (sum(q x) - z sum(x)) (exact in int32; z = 32 for
//               Q6_K, 4 for Q3_K), then acc = fma(d * d_x, isum, acc)
//   Q2_K:       per 16-value half h, isum = sc_2j+h sum(q x), then acc = fma(d * d_x, isum, acc),
//               acc = fma(-(dmin * m_2j+h), d_x * sum_h(x), acc)
// with every product rounded to f32 before it is used (the parenthesised ones first).
#include <cmath>
#include <type_traits>

#include "core/half.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_kquant_x8.h"

namespace pagoda::kernels::ref {
namespace {

using quant::BlockQ8_0;
using quant::DecodedSuperBlock;
using quant::kQK_K;

constexpr int64_t kBlocksPerSuper = kQK_K / BlockQ8_0::kNumValues;

// One decoded super-block times its eight activation blocks, added to acc.
float super_block_with_mins(const DecodedSuperBlock& s, const BlockQ8_0* x, float acc) {
  const float d = fp16_to_float(s.d), dmin = fp16_to_float(s.dmin);
  for (int64_t j = 0; j < kBlocksPerSuper; ++j) {
    int32_t isum = 0, xsum = 0;
    for (int64_t i = 0; i < 32; ++i) {
      isum += int32_t(s.q[32 * j + i]) * x[j].qs[i];
      xsum += x[j].qs[i];
    }
    const float dx = fp16_to_float(x[j].d);
    const float dsc = d * float(s.scales[j]), dm = dmin * float(s.mins[j]);
    const float xs = dx * float(xsum);
    acc = std::fma(dsc * dx, float(isum), acc);
    acc = std::fma(-dm, xs, acc);
  }
  return acc;
}

// Q6_K (offset 32) and Q3_K (offset 4): a signed scale per 16 values, no mins.
float super_block_with_offset(const DecodedSuperBlock& s, const BlockQ8_0* x, float acc, int32_t offset) {
  const float d = fp16_to_float(s.d);
  for (int64_t j = 0; j < kBlocksPerSuper; ++j) {
    for (int64_t half = 0; half < 2; ++half) {
      int32_t part = 0;
      for (int64_t i = 16 * half; i < 16 * half + 16; ++i) part += (int32_t(s.q[32 * j + i]) - offset) * x[j].qs[i];
      acc = std::fma(d * fp16_to_float(x[j].d), float(int32_t(s.scales[2 * j + half]) * part), acc);
    }
  }
  return acc;
}

float super_block_q2(const DecodedSuperBlock& s, const BlockQ8_0* x, float acc) {
  const float d = fp16_to_float(s.d), dmin = fp16_to_float(s.dmin);
  for (int64_t j = 0; j < kBlocksPerSuper; ++j) {
    const float dx = fp16_to_float(x[j].d);
    for (int64_t half = 0; half < 2; ++half) {
      int32_t part = 0, xsum = 0;
      for (int64_t i = 16 * half; i < 16 * half + 16; ++i) {
        part += int32_t(s.q[32 * j + i]) * x[j].qs[i];
        xsum += x[j].qs[i];
      }
      const int64_t sub = 2 * j + half;
      acc = std::fma(d * dx, float(int32_t(s.scales[sub]) * part), acc);
      const float dm = dmin * float(s.mins[sub]), xs = dx * float(xsum);
      acc = std::fma(-dm, xs, acc);
    }
  }
  return acc;
}

template <class Block, class A, class B>
constexpr bool kIs = std::is_same_v<Block, A> || std::is_same_v<Block, B>;

template <class Block>
float super_block(const DecodedSuperBlock& s, const BlockQ8_0* x, float acc) {
  if constexpr (kIs<Block, quant::BlockQ6_K, quant::BlockQ6_Kx8>) return super_block_with_offset(s, x, acc, 32);
  if constexpr (kIs<Block, quant::BlockQ3_K, quant::BlockQ3_Kx8>) return super_block_with_offset(s, x, acc, 4);
  if constexpr (kIs<Block, quant::BlockQ2_K, quant::BlockQ2_Kx8>) return super_block_q2(s, x, acc);
  return super_block_with_mins(s, x, acc);
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
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_kquant_shape(
      num_out, num_in, requires { Block::kNumRows; } ? quant::kX8Rows : 1);
  const int64_t num_super = num_in / kQK_K, num_blocks = num_in / BlockQ8_0::kNumValues;
  const auto* blocks = static_cast<const Block*>(w);
  DecodedSuperBlock s;
  for (int64_t o = 0; o < num_out; ++o)
    for (int64_t t = 0; t < num_tokens; ++t) {
      float acc = 0.0f;
      for (int64_t b = 0; b < num_super; ++b) {
        decode(blocks, o, b, num_super, s);
        const BlockQ8_0* x = xq + t * num_blocks + b * kBlocksPerSuper;
        acc = super_block<Block>(s, x, acc);
      }
      y[t * y_stride + o] = acc;
    }
}

template <class Block>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_xq<Block>(w, quantize_activations_q8_0(quant::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                   num_tokens, num_out);
}

}  // namespace

#define PAGODA_REF_KQUANT(name, Block)                                                                               \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    matmul_f32_in<quant::Block>(w, x, y, num_out, num_in, num_tokens);                                               \
  }                                                                                                                  \
  void matmul_##name##_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,           \
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
#undef PAGODA_REF_KQUANT

}  // namespace pagoda::kernels::ref
