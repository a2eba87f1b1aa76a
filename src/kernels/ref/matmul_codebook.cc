// Scalar references for the 4-bit codebook matmuls (IQ4_NL, IQ4_XS, MXFP4 as a GGUF stores them, and their 8-row
// interleaved copies, quant/block_iq4_x8.h). Both layouts decode a 32-value block to the same integers and scale
// (quant::DecodedCodebookBlock), so they give the same bits, and so does every SIMD level
// (kernels/codebook_x8_impl.h). IQ4_NL and MXFP4 read Q8_0 activations: per row and 32-value activation block j, in
// block order,
//   isum = sum(level_i x_i) (exact in int32), acc = fma(scale_j * d_x, float(isum), acc)
// with the product scale_j * d_x rounded to f32 first. IQ4_XS reads q8_K activations, as ggml's
// vec_dot_iq4_xs_q8_K: per row and super-block, in super-block order, with ls_j its eight 6-bit sub-block scales,
//   isum = sum_j (ls_j - 32) sum_32(level_i x_i) (exact in int32), acc = fma(d * d_x, float(isum), acc).
#include <cmath>

#include "core/half.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_iq4_x8.h"

namespace pagoda::kernels::ref {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::DecodedCodebookBlock;

// Values per block of the type (a group's block covers the same columns as one stored block).
template <class Block>
constexpr int64_t values_per_block() {
  if constexpr (requires { Block::kNumRows; })
    return Block::kNumBlocks * 32;
  else
    return Block::kNumValues;
}

// Row o's 32-value block j of its block b: stored blocks row-major, or row o % 8 of group o / 8.
template <class Block>
void decode(const Block* w, int64_t o, int64_t b, int64_t j, int64_t blocks_per_row, DecodedCodebookBlock& s) {
  if constexpr (requires { Block::kNumRows; })
    quant::decode_codebook_block(w[o / Block::kNumRows * blocks_per_row + b], o % Block::kNumRows, j, s);
  else
    quant::decode_codebook_block(w[o * blocks_per_row + b], j, s);
}

template <class Block>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  constexpr int64_t kValues = values_per_block<Block>();
  check_codebook_shape(
      num_out, num_in, kValues, requires { Block::kNumRows; } ? quant::kX8Rows : 1);
  const int64_t blocks_per_row = num_in / kValues, num_x_blocks = num_in / BlockQ8_0::kNumValues;
  const auto* blocks = static_cast<const Block*>(w);
  DecodedCodebookBlock s;
  for (int64_t o = 0; o < num_out; ++o)
    for (int64_t t = 0; t < num_tokens; ++t) {
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks_per_row; ++b)
        for (int64_t j = 0; j < kValues / 32; ++j) {
          decode(blocks, o, b, j, blocks_per_row, s);
          const BlockQ8_0& x = xq[t * num_x_blocks + b * (kValues / 32) + j];
          int32_t isum = 0;
          for (int64_t i = 0; i < 32; ++i) isum += int32_t(s.levels[i]) * x.qs[i];
          acc = std::fma(s.scale * fp16_to_float(x.d), float(isum), acc);
        }
      y[t * y_stride + o] = acc;
    }
}

template <class Block>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_xq<Block>(w, quantize_activations_q8_0(quant::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                   num_tokens, num_out);
}

// IQ4_XS's integer parts of row o's super-block b: its fp16 d and the sub-block scales ls_j - 32.
struct Iq4XsScales {
  uint16_t d = 0;
  int32_t sub[8] = {};
};

Iq4XsScales iq4_xs_scales(const quant::BlockIQ4_XS* w, int64_t o, int64_t b, int64_t num_super) {
  const quant::BlockIQ4_XS& blk = w[o * num_super + b];
  Iq4XsScales s;
  s.d = blk.d;
  for (int j = 0; j < 8; ++j)
    s.sub[j] = int32_t(((blk.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((blk.scales_h >> (2 * j)) & 3) << 4)) - 32;
  return s;
}

Iq4XsScales iq4_xs_scales(const quant::BlockIQ4_XSx8* w, int64_t o, int64_t b, int64_t num_super) {
  const quant::BlockIQ4_XSx8& g = w[o / quant::kX8Rows * num_super + b];
  Iq4XsScales s;
  s.d = g.d[o % quant::kX8Rows];
  for (int j = 0; j < 8; ++j) s.sub[j] = g.scales[j][o % quant::kX8Rows];
  return s;
}

template <class Block>
void matmul_xq_q8_K(const void* w, const BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
                    int64_t y_stride) {
  constexpr int64_t kValues = quant::kQK_K;
  check_codebook_shape(
      num_out, num_in, kValues, requires { Block::kNumRows; } ? quant::kX8Rows : 1);
  const int64_t num_super = num_in / kValues;
  const auto* blocks = static_cast<const Block*>(w);
  DecodedCodebookBlock s;
  for (int64_t o = 0; o < num_out; ++o)
    for (int64_t t = 0; t < num_tokens; ++t) {
      float acc = 0.0f;
      for (int64_t b = 0; b < num_super; ++b) {
        const Iq4XsScales sc = iq4_xs_scales(blocks, o, b, num_super);
        const BlockQ8_K& x = xq[t * num_super + b];
        int32_t isum = 0;
        for (int64_t j = 0; j < kValues / 32; ++j) {
          decode(blocks, o, b, j, num_super, s);
          int32_t part = 0;
          for (int64_t i = 0; i < 32; ++i) part += int32_t(s.levels[i]) * x.qs[32 * j + i];
          isum += sc.sub[j] * part;
        }
        acc = std::fma(fp16_to_float(sc.d) * x.d, float(isum), acc);
      }
      y[t * y_stride + o] = acc;
    }
}

template <class Block>
void matmul_f32_in_q8_K(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_xq_q8_K<Block>(w, quantize_activations_q8_K(quant::quantize_row_q8_K, x, num_in, num_tokens), y, num_out,
                        num_in, num_tokens, num_out);
}

}  // namespace

// One entry pair per type: the f32-input matmul and the one over activations already quantized to the type's partner
// format (act: q8_0 or q8_K, ActBlock its block), each through the reference of that format.
#define PAGODA_REF_CODEBOOK(name, Block, act, ActBlock, f32_in, over_xq)                                            \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    f32_in<quant::Block>(w, x, y, num_out, num_in, num_tokens);                                                      \
  }                                                                                                                  \
  void matmul_##name##_##act(const void* w, const ActBlock* xq, float* y, int64_t num_out, int64_t num_in,           \
                             int64_t num_tokens, int64_t y_stride) {                                                 \
    over_xq<quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);                                          \
  }
PAGODA_REF_CODEBOOK(iq4_nl, BlockIQ4_NL, q8_0, BlockQ8_0, matmul_f32_in, matmul_xq)
PAGODA_REF_CODEBOOK(mxfp4, BlockMXFP4, q8_0, BlockQ8_0, matmul_f32_in, matmul_xq)
PAGODA_REF_CODEBOOK(iq4_nlx8, BlockIQ4_NLx8, q8_0, BlockQ8_0, matmul_f32_in, matmul_xq)
PAGODA_REF_CODEBOOK(mxfp4x8, BlockMXFP4x8, q8_0, BlockQ8_0, matmul_f32_in, matmul_xq)
PAGODA_REF_CODEBOOK(iq4_xs, BlockIQ4_XS, q8_K, BlockQ8_K, matmul_f32_in_q8_K, matmul_xq_q8_K)
PAGODA_REF_CODEBOOK(iq4_xsx8, BlockIQ4_XSx8, q8_K, BlockQ8_K, matmul_f32_in_q8_K, matmul_xq_q8_K)
#undef PAGODA_REF_CODEBOOK

}  // namespace pagoda::kernels::ref
