// AVX2/FMA/F16C kernels. Only files in avx2/ are compiled with -mavx2 -mfma -mf16c; call them only through a
// KernelTable chosen after a cpuid check.
#pragma once

#include "kernels/kernels.h"

namespace pagoda::kernels::avx2 {
void matmul_f32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_f16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
// matmul_f16's and matmul_bf16's path for calls of kTiledMinTokens tokens or more (matmul_half_tiled.cc): the same
// bits a token.
inline constexpr int64_t kTiledMinTokens = 12;
void matmul_f16_tiled(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_bf16_tiled(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
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
void quantize_row_q8_0(const float* x, quant::BlockQ8_0* y, int64_t n);
void matmul_int8x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_int8x8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
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
float quantize_row_int8(const float* x, int8_t* q, int64_t n);
void quantize_kv_row(KvDType type, const float* x, int32_t n, uint8_t* row);
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
void short_conv(const float* taps, float* state, const float* x, float* y, int64_t dim, int32_t num_taps,
                int64_t num_tokens);
void gated_delta_net(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride, const float* g,
                     const float* beta, int64_t gate_stride, float* out, int64_t out_stride, int32_t head_dim,
                     int64_t num_tokens, float scale);
void gated_delta_net_chunked(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride,
                             const float* g, const float* beta, int64_t gate_stride, float* out, int64_t out_stride,
                             int32_t head_dim, int64_t num_tokens, float scale);
void matmul_q2_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q2_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q3_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q3_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
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
void matmul_q7_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q7_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_iq4_nlx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_iq4_nlx8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                          int64_t num_tokens, int64_t y_stride);
void matmul_q4_1x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q4_1x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_q5_1x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_q5_1x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride);
void matmul_iq4_xsx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_iq4_xsx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                          int64_t num_tokens, int64_t y_stride);
void matmul_mxfp4x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
void matmul_mxfp4x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride);
}  // namespace pagoda::kernels::avx2
