// Scalar reference matmul for AWQ INT4 weights (groups of 32, 64, 128) against Q8_0 activations: per 32-value
// sub-block, sum_i (q_i - zero) * x_i as an exact integer, scaled by d_w * d_x.
#include "core/half.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_awq_int4.h"

namespace pagoda::kernels::ref {
namespace {

using quant::BlockQ8_0;

template <int64_t kGroup>
float dot_awq_int4_q8_0(const quant::BlockAwqInt4<kGroup>* w, const BlockQ8_0* x, int64_t num_groups) {
  constexpr int64_t kSub = quant::BlockAwqInt4<kGroup>::kNumSubBlocks;
  float sum = 0.0f;
  for (int64_t g = 0; g < num_groups; ++g) {
    const int32_t zero = w[g].zero;
    for (int64_t k = 0; k < kSub; ++k) {
      const BlockQ8_0& xb = x[g * kSub + k];
      int32_t sumi = 0;
      for (int64_t j = 0; j < 16; ++j) {
        const uint8_t packed = w[g].qs[16 * k + j];
        sumi += (int32_t(packed & 0x0f) - zero) * int32_t(xb.qs[j]);
        sumi += (int32_t(packed >> 4) - zero) * int32_t(xb.qs[j + 16]);
      }
      sum += float(sumi) * fp16_to_float(w[g].d) * fp16_to_float(xb.d);
    }
  }
  return sum;
}

template <int64_t kGroup>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_group_row_length(num_in, kGroup);
  const int64_t num_groups = num_in / kGroup;
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const auto* wb = static_cast<const quant::BlockAwqInt4<kGroup>*>(w);
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t o = 0; o < num_out; ++o)
      y[t * y_stride + o] = dot_awq_int4_q8_0<kGroup>(wb + o * num_groups, xq + t * num_blocks, num_groups);
}

template <int64_t kGroup>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  check_group_row_length(num_in, kGroup);
  matmul_xq<kGroup>(w, quantize_activations_q8_0(quant::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                    num_tokens, num_out);
}

}  // namespace

void matmul_awq_int4_g32_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                              int64_t num_tokens, int64_t y_stride) {
  matmul_xq<32>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4_g64_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                              int64_t num_tokens, int64_t y_stride) {
  matmul_xq<64>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4_g128_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                               int64_t num_tokens, int64_t y_stride) {
  matmul_xq<128>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4_g32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<32>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_awq_int4_g64(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<64>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_awq_int4_g128(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,
                          int64_t num_tokens) {
  matmul_f32_in<128>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::ref
