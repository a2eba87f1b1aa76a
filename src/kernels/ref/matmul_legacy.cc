// Scalar references for ggml's Q4_1 and Q5_1 matmuls (as a GGUF stores them, and their 8-row interleaved copies,
// quant/block_legacy_x8.h) against Q8_0 activations. Both layouts decode a block to the same integers, fp16 scale
// and minimum (quant::DecodedAffineBlock), so they give the same bits, and so does every SIMD level
// (kernels/legacy_x8_impl.h). A weight is q d + m, so a block's dot product is d d_x sum(q x) + m d_x sum(x), ggml's
// vec_dot_q4_1_q8_1 with the q8_1 activation sum s = d_x sum(x) kept in f32 rather than rounded to fp16 (the
// integers x and scale d_x are quantize_row_q8_1's). Per row and 32-value activation block, in block order,
//   isum = sum(q_i x_i), xsum = sum(x_i) (exact in int32),
//   acc = fma(d * d_x, float(isum), acc), acc = fma(m, d_x * float(xsum), acc)
// with each product of two scales rounded to f32 first.
#include <cmath>

#include "core/half.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_legacy_x8.h"

namespace pagoda::kernels::ref {
namespace {

using quant::BlockQ8_0;
using quant::DecodedAffineBlock;

template <class Block>
constexpr bool kAffineInterleaved = requires { Block::kNumRows; };

// Row o's block b: stored blocks row-major, or row o % 8 of group o / 8.
template <class Block>
void decode_affine(const Block* w, int64_t o, int64_t b, int64_t blocks_per_row, DecodedAffineBlock& s) {
  if constexpr (kAffineInterleaved<Block>)
    quant::decode_affine_block(w[o / Block::kNumRows * blocks_per_row + b], o % Block::kNumRows, s);
  else
    quant::decode_affine_block(w[o * blocks_per_row + b], s);
}

template <class Block>
void affine_matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_codebook_shape(num_out, num_in, 32, kAffineInterleaved<Block> ? quant::kX8Rows : 1);
  const int64_t blocks_per_row = num_in / BlockQ8_0::kNumValues;
  const auto* blocks = static_cast<const Block*>(w);
  DecodedAffineBlock s;
  for (int64_t o = 0; o < num_out; ++o)
    for (int64_t t = 0; t < num_tokens; ++t) {
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks_per_row; ++b) {
        decode_affine(blocks, o, b, blocks_per_row, s);
        const BlockQ8_0& x = xq[t * blocks_per_row + b];
        int32_t isum = 0, xsum = 0;
        for (int64_t i = 0; i < 32; ++i) {
          isum += int32_t(s.q[i]) * x.qs[i];
          xsum += x.qs[i];
        }
        const float dx = fp16_to_float(x.d);
        acc = std::fma(fp16_to_float(s.d) * dx, float(isum), acc);
        acc = std::fma(fp16_to_float(s.m), dx * float(xsum), acc);
      }
      y[t * y_stride + o] = acc;
    }
}

template <class Block>
void affine_matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  affine_matmul_xq<Block>(w, quantize_activations_q8_0(quant::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                   num_tokens, num_out);
}

}  // namespace

#define PAGODA_REF_LEGACY_MATMUL(name, Block)                                                                        \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    affine_matmul_f32_in<quant::Block>(w, x, y, num_out, num_in, num_tokens);                                               \
  }                                                                                                                  \
  void matmul_##name##_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,           \
                            int64_t num_tokens, int64_t y_stride) {                                                  \
    affine_matmul_xq<quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);                                        \
  }
PAGODA_REF_LEGACY_MATMUL(q4_1, BlockQ4_1)
PAGODA_REF_LEGACY_MATMUL(q5_1, BlockQ5_1)
PAGODA_REF_LEGACY_MATMUL(q4_1x8, BlockQ4_1x8)
PAGODA_REF_LEGACY_MATMUL(q5_1x8, BlockQ5_1x8)
#undef PAGODA_REF_LEGACY_MATMUL

}  // namespace pagoda::kernels::ref
