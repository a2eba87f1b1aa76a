// Kernels built on the 256-bit vpdpbusd (u8 x s8 -> int32 dot products of 4), the avx_vnni level's additions. The
// folder is compiled twice (src/kernels/CMakeLists.txt): as avx_vnni with -mavxvnni (the VEX encoding of
// Alder Lake, Sapphire Rapids and Zen 5) and as avx_vnni_evex with AVX512-VL + VNNI (the EVEX encoding, the only
// one Zen 4 and Ice Lake have; it also gets 32 vector registers). Each source names its namespace
// PAGODA_KERNEL_NS, one of the two; call them only through a KernelTable chosen after a cpuid check.
#pragma once

#include "kernels/kernels.h"

#define PAGODA_DECLARE_AVX_VNNI_KERNELS(ns)                                                                         \
  namespace pagoda::kernels::ns {                                                                                   \
  void matmul_q4_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_q4_0x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,     \
                          int64_t num_tokens, int64_t y_stride);                                                    \
  void matmul_awq_int4x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,                  \
                         int64_t num_tokens);                                                                       \
  void matmul_awq_int4x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, \
                              int64_t num_tokens, int64_t y_stride);                                                \
  void matmul_q8_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_q8_0x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,     \
                          int64_t num_tokens, int64_t y_stride);                                                    \
  void matmul_int8x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_int8x8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,        \
                          int64_t num_in, int64_t num_tokens, int64_t y_stride);                                    \
  void matmul_q2_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_q2_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,     \
                          int64_t num_tokens, int64_t y_stride);                                                    \
  void matmul_q3_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_q3_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,     \
                          int64_t num_tokens, int64_t y_stride);                                                    \
  void matmul_q4_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_q4_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,     \
                          int64_t num_tokens, int64_t y_stride);                                                    \
  void matmul_q5_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_q5_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,     \
                          int64_t num_tokens, int64_t y_stride);                                                    \
  void matmul_q6_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_q6_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,     \
                          int64_t num_tokens, int64_t y_stride);                                                    \
  void matmul_q7_Kx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens); \
  void matmul_q7_Kx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,     \
                          int64_t num_tokens, int64_t y_stride);                                                    \
  void matmul_iq4_nlx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,                    \
                     int64_t num_tokens);                                                                           \
  void matmul_iq4_nlx8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out,                   \
                          int64_t num_in, int64_t num_tokens, int64_t y_stride);                                    \
  void matmul_iq4_xsx8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,                    \
                     int64_t num_tokens);                                                                           \
  void matmul_iq4_xsx8_q8_K(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out,                   \
                          int64_t num_in, int64_t num_tokens, int64_t y_stride);                                    \
  void matmul_mxfp4x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,                     \
                     int64_t num_tokens);                                                                           \
  void matmul_mxfp4x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out,                    \
                          int64_t num_in, int64_t num_tokens, int64_t y_stride);                                    \
  void matmul_q4_1x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,                      \
                     int64_t num_tokens);                                                                           \
  void matmul_q4_1x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out,                     \
                          int64_t num_in, int64_t num_tokens, int64_t y_stride);                                    \
  void matmul_q5_1x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,                      \
                     int64_t num_tokens);                                                                           \
  void matmul_q5_1x8_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out,                     \
                          int64_t num_in, int64_t num_tokens, int64_t y_stride);                                    \
  }

PAGODA_DECLARE_AVX_VNNI_KERNELS(avx_vnni)
PAGODA_DECLARE_AVX_VNNI_KERNELS(avx_vnni_evex)
