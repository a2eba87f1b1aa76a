// The scalar reference kernels: the test oracle for every SIMD kernel. Written for clarity, never tuned.
#pragma once

#include "kernels/kernels.h"

namespace pagoda::kernels::ref {
void short_conv(const float* taps, float* state, const float* x, float* y, int64_t dim, int32_t num_taps,
                int64_t num_tokens);
void gated_delta_net(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride, const float* g,
                     const float* beta, int64_t gate_stride, float* out, int64_t out_stride, int32_t head_dim,
                     int64_t num_tokens, float scale);
void gated_delta_net_chunked(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride,
                             const float* g, const float* beta, int64_t gate_stride, float* out, int64_t out_stride,
                             int32_t head_dim, int64_t num_tokens, float scale);
void matmul_f32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_f16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
// The AVX512-BF16 bf16 matmul's arithmetic (ref/matmul_bf16_pairs.cc): activations rounded to bf16, vdpbf16ps's
// pairs on 16 lanes from where w's 64-byte lines start, its flushes of subnormals, transpose_sum16's reduction. Bit
// for bit what that kernel gives.
void matmul_bf16_pairs(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
// f32 -> bf16 as vcvtne2ps2bf16 rounds an activation: nearest even, a subnormal to signed zero.
uint16_t bf16_activation(float v);
void matmul_q8_0(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q4_0(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q8_0_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q4_0_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q4_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q4_0x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q8_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q8_0x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q4_0x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q4_0x16_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride);
void matmul_q8_0x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q8_0x16_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride);
void matmul_awq_int4x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_awq_int4x16_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                             int64_t num_tokens, int64_t y_stride);
void matmul_int8x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_int8x8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                        int64_t num_in, int64_t num_tokens, int64_t y_stride);
void matmul_int8x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_int8x16_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                         int64_t num_in, int64_t num_tokens, int64_t y_stride);
void matmul_awq_int4x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_awq_int4x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                            int64_t num_tokens, int64_t y_stride);
void matmul_int8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_int8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_awq_int4_g32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_awq_int4_g64(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_awq_int4_g128(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_awq_int4_g32_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                              int64_t num_tokens, int64_t y_stride);
void matmul_awq_int4_g64_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                              int64_t num_tokens, int64_t y_stride);
void matmul_awq_int4_g128_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                               int64_t num_tokens, int64_t y_stride);
void matmul_q2_K(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q2_K_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q3_K(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q3_K_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q2_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q2_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q3_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q3_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q4_K(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q4_K_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q5_K(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q5_K_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q6_K(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q6_K_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q4_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q4_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q5_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q5_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q6_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q6_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q7_K(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q7_K_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q7_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q7_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_iq4_nl(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_iq4_nl_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_iq4_xs(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_iq4_xs_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_mxfp4(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_mxfp4_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                       int64_t num_tokens, int64_t y_stride);
void matmul_iq4_nlx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_iq4_nlx8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                          int64_t num_tokens, int64_t y_stride);
void matmul_iq4_xsx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_iq4_xsx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                          int64_t num_tokens, int64_t y_stride);
void matmul_mxfp4x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_mxfp4x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride);
void matmul_q4_1(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q4_1_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q5_1(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q5_1_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                      int64_t num_tokens, int64_t y_stride);
void matmul_q4_1x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q4_1x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q5_1x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q5_1x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps);
void rmsnorm_q8_0(const float* x, const float* weight, quant::BlockQ8_0* y, int64_t n, float eps);
float dot(const float* a, const float* b, int64_t n);
void axpy(float a, const float* x, float* y, int64_t n);
void silu_mul(float* gate, const float* up, int64_t n);
void gelu_mul(float* gate, const float* up, int64_t n);
void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit);
void paged_attention(const AttentionArgs& args);
void softmax(const float* x, float* y, int64_t n);
void rope(const float* in, float* out, int32_t num_heads, int32_t head_dim, int32_t half_rope, const float* cs,
          const float* sn, bool neox);
}  // namespace pagoda::kernels::ref
