// Scalar references for the 4-bit row-interleaved layouts, Q4_0x8/x16 and AWQ INT4x8/x16 (quant/block_q4_0x8.h,
// block_awq_int4x8.h), against Q8_0 activations, in exactly the SIMD kernels' arithmetic (avx2/matmul_int4x8.cc):
// per row and block an exact integer sum(nibble * x) - z sum(x) (z = 8 for Q4_0, the row's zero point for AWQ),
// then acc = fma(d_w * d_x, float(isum), acc) block after block, so the two agree bit for bit.
#include <cmath>
#include <type_traits>

#include "core/half.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_awq_int4x8.h"
#include "quant/block_q4_0x8.h"

namespace pagoda::kernels::ref {
namespace {

template <class Block>
int32_t nibble_offset(const Block& blk, int64_t r) {
  if constexpr (std::is_same_v<Block, quant::BlockAwqInt4x8> || std::is_same_v<Block, quant::BlockAwqInt4x16>)
    return blk.zero[r];
  else
    return 8;
}

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
        int32_t isum = 0, xsum = 0;
        for (int64_t word = 0; word < 4; ++word) {
          for (int64_t j = 0; j < 4; ++j) {
            const uint8_t byte = blk.qs[4 * kRows * word + 4 * r + j];
            isum += int32_t(byte & 0x0f) * x[b].qs[4 * word + j] + int32_t(byte >> 4) * x[b].qs[16 + 4 * word + j];
          }
        }
        for (int64_t i = 0; i < quant::BlockQ8_0::kNumValues; ++i) xsum += x[b].qs[i];
        isum -= nibble_offset(blk, r) * xsum;
        acc = std::fma(fp16_to_float(blk.d[r]) * fp16_to_float(x[b].d), float(isum), acc);
      }
      y[t * y_stride + o] = acc;
    }
  }
}

template <class Block>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_xq<Block>(w, quantize_activations_q8_0(quant::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                   num_tokens, num_out);
}

}  // namespace

void matmul_q4_0x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride) {
  matmul_xq<quant::BlockQ4_0x8>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                            int64_t num_tokens, int64_t y_stride) {
  matmul_xq<quant::BlockAwqInt4x8>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_q4_0x16_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride) {
  matmul_xq<quant::BlockQ4_0x16>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4x16_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                             int64_t num_tokens, int64_t y_stride) {
  matmul_xq<quant::BlockAwqInt4x16>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_q4_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<quant::BlockQ4_0x8>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_awq_int4x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<quant::BlockAwqInt4x8>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_q4_0x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<quant::BlockQ4_0x16>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_awq_int4x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<quant::BlockAwqInt4x16>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::ref
