// Scalar reference for Q8_0x8 and Q8_0x16 weights (quant/block_q8_0x8.h) against Q8_0 activations, in exactly the
// SIMD kernels' arithmetic: per row and block the exact integer sum(w x), then acc = fma(d_w * d_x, float(isum), acc)
// block after block, so the two agree bit for bit.
#include <cmath>

#include "core/half.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_q8_0x8.h"

namespace pagoda::kernels::ref {

namespace {

template <class Block>
void matmul_xq(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  constexpr int64_t kRows = Block::kNumRows;
  check_x8_block_shape(num_out, num_in, kRows);
  const int64_t num_blocks = num_in / quant::BlockQ8_0::kNumValues;
  const auto* groups = static_cast<const Block*>(w);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const quant::BlockQ8_0* x = xq + t * num_blocks;
    for (int64_t o = 0; o < num_out; ++o) {
      const int64_t g = o / kRows, r = o % kRows;
      float acc = 0.0f;
      for (int64_t b = 0; b < num_blocks; ++b) {
        const Block& blk = groups[g * num_blocks + b];
        int32_t isum = 0;
        for (int64_t word = 0; word < 8; ++word)
          for (int64_t j = 0; j < 4; ++j) isum += int32_t(blk.qs[4 * kRows * word + 4 * r + j]) * x[b].qs[4 * word + j];
        acc = std::fma(fp16_to_float(blk.d[r]) * fp16_to_float(x[b].d), float(isum), acc);
      }
      y[t * y_stride + o] = acc;
    }
  }
}

}  // namespace

void matmul_q8_0x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride) {
  matmul_xq<quant::BlockQ8_0x8>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_q8_0x16_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride) {
  matmul_xq<quant::BlockQ8_0x16>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_q8_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q8_0x8_q8_0(w, quantize_activations_q8_0(quant::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                     num_tokens, num_out);
}
void matmul_q8_0x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q8_0x16_q8_0(w, quantize_activations_q8_0(quant::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                      num_tokens, num_out);
}

}  // namespace pagoda::kernels::ref
