// Scalar reference matmul for Q8_0 and Q4_0 weights: each token row is quantized to Q8_0 once, then every
// output is a sum over blocks of (int32 dot of the block's integers) * d_w * d_x, in block order (as ggml's
// reference vec_dot_q8_0_q8_0 / vec_dot_q4_0_q8_0).
#include "core/half.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_q4_0.h"

namespace pagoda::kernels::ref {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;

float dot_q8_0_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t num_blocks) {
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t sumi = 0;
    for (int64_t j = 0; j < BlockQ8_0::kNumValues; ++j) sumi += int32_t(w[b].qs[j]) * int32_t(x[b].qs[j]);
    sum += float(sumi) * fp16_to_float(w[b].d) * fp16_to_float(x[b].d);
  }
  return sum;
}

float dot_q4_0_q8_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t num_blocks) {
  constexpr int64_t kHalf = BlockQ4_0::kNumValues / 2;
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t sumi = 0;
    for (int64_t j = 0; j < kHalf; ++j) {
      sumi += (int32_t(w[b].qs[j] & 0x0f) - 8) * int32_t(x[b].qs[j]);
      sumi += (int32_t(w[b].qs[j] >> 4) - 8) * int32_t(x[b].qs[j + kHalf]);
    }
    sum += float(sumi) * fp16_to_float(w[b].d) * fp16_to_float(x[b].d);
  }
  return sum;
}

template <class Block, class DotFn>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride, DotFn dot) {
  check_quant_row_length(num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const Block* wb = static_cast<const Block*>(w);
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t o = 0; o < num_out; ++o)
      y[t * y_stride + o] = dot(wb + o * num_blocks, xq + t * num_blocks, num_blocks);
  }
}

const BlockQ8_0* quantize_tokens(const float* x, int64_t num_in, int64_t num_tokens) {
  return quantize_activations_q8_0(quant::quantize_row_q8_0, x, num_in, num_tokens);
}

}  // namespace

void matmul_q8_0_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
                      int64_t y_stride) {
  matmul_xq<BlockQ8_0>(w, xq, y, num_out, num_in, num_tokens, y_stride, dot_q8_0_q8_0);
}

void matmul_q4_0_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
                      int64_t y_stride) {
  matmul_xq<BlockQ4_0>(w, xq, y, num_out, num_in, num_tokens, y_stride, dot_q4_0_q8_0);
}

void matmul_q8_0(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q8_0_q8_0(w, quantize_tokens(x, num_in, num_tokens), y, num_out, num_in, num_tokens, num_out);
}

void matmul_q4_0(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q4_0_q8_0(w, quantize_tokens(x, num_in, num_tokens), y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::ref
