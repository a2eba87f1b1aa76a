// KernelTable: the hot ops of the forward pass, one function pointer per op and weight dtype. An instance is
// filled once per process for the best instruction set the CPU has (dispatch.cc); callers hold a reference and
// make one indirect call per op. Every entry has a scalar reference twin (ref/) that the tests compare against.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/attention_args.h"
#include "quant/block_q8_0.h"

namespace pagoda::kernels {

enum class Isa : uint8_t { kScalar, kAvx2 };
std::string_view isa_name(Isa isa);

// y[t][o] = sum_i w[o][i] * x[t][i] for t < num_tokens, o < num_out. w: [num_out, num_in] row-major in the
// weight dtype; x: f32 [num_tokens, num_in]; y: f32 [num_tokens, num_out] (row stride num_out).
using MatmulFn = void (*)(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
// The same product with the activations already quantized: xq: Q8_0 [num_tokens, num_in / 32] blocks; token t's
// outputs go to y[t * y_stride + o], so a thread can compute a slice of the rows for every token.
using MatmulQ8Fn = void (*)(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                            int64_t num_tokens, int64_t y_stride);
// The same for per-token INT8 activations: xq: int8 [num_tokens, num_in], token t's values are xq[t * num_in + i]
// * x_scales[t] (quant/row_int8.h).
using MatmulInt8Fn = void (*)(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                              int64_t num_in, int64_t num_tokens, int64_t y_stride);

struct KernelTable {
  Isa isa = Isa::kScalar;
  MatmulFn matmul_f32 = nullptr;
  MatmulFn matmul_f16 = nullptr;
  MatmulFn matmul_bf16 = nullptr;
  // Quantized weights: w is [num_out, num_in / 32] blocks, row-major (GGUF's layout); num_in must be a multiple
  // of 32. Each token row of x is quantized to Q8_0 once, into a grow-only thread_local scratch (no heap
  // allocation on a steady-state step), and each output is an integer dot product scaled per block.
  MatmulFn matmul_q8_0 = nullptr;
  MatmulFn matmul_q4_0 = nullptr;
  // The same kernels on activations the caller quantized (with quantize_row_q8_0 below): lets a thread pool
  // quantize x once and split the output rows, and lets RMSNorm fuse the quantization.
  MatmulQ8Fn matmul_q8_0_q8_0 = nullptr;
  MatmulQ8Fn matmul_q4_0_q8_0 = nullptr;
  // Q4_0 repacked into groups of 8 interleaved rows (quant/block_q4_0x8.h, made at model load): w is
  // [num_out / 8, num_in / 32] groups, num_out a multiple of 8 and w the group of the first row. Per row and block
  // an exact integer dot product, then acc = fma(d_w * d_x, float(isum), acc) in block order, so every table gives
  // the same bits (not matmul_q4_0's, whose float sums go in another order) and a token's result never depends on
  // the tokens beside it.
  MatmulFn matmul_q4_0x8 = nullptr;
  MatmulQ8Fn matmul_q4_0x8_q8_0 = nullptr;
  // The same for Q8_0 repacked into 8-row groups (quant/block_q8_0x8.h).
  MatmulFn matmul_q8_0x8 = nullptr;
  MatmulQ8Fn matmul_q8_0x8_q8_0 = nullptr;
  // x: f32 [n] -> y: Q8_0 [n / 32]; n a multiple of 32. Every table's version writes the same bytes as
  // quant::quantize_row_q8_0 for any x without nan, so scalar and SIMD matmuls see identical integers.
  void (*quantize_row_q8_0)(const float* x, quant::BlockQ8_0* y, int64_t n) = nullptr;
  // INT8 per-channel weights (quant/row_int8.h: rows of an f32 scale and num_in int8, any num_in up to
  // quant::kMaxInt8RowLength) against INT8 activations with one scale per token (W8A8, dynamic per-token scales).
  // The integer dot product is exact in int32, so every table gives the same bits: y = float(sum_i w_q * x_q) *
  // (w_scale * x_scale).
  MatmulFn matmul_int8 = nullptr;
  MatmulInt8Fn matmul_int8_int8 = nullptr;
  // INT8 rows repacked into groups of 8 interleaved rows (quant/row_int8x8.h, made at model load): num_out a
  // multiple of 8, num_in of 4, w the group of the first row. The same bits as matmul_int8 on the plain rows.
  MatmulFn matmul_int8x8 = nullptr;
  MatmulInt8Fn matmul_int8x8_int8 = nullptr;
  // x: f32 [n] -> q: int8 [n], returns the scale; the same bytes as quant::quantize_int8_values for x without nan.
  float (*quantize_row_int8)(const float* x, int8_t* q, int64_t n) = nullptr;
  // AWQ INT4 weights (quant/block_awq_int4.h) with groups of 32, 64 or 128 against Q8_0 activations: per 32-value
  // sub-block an integer dot product of (q - zero) with the activations, scaled by d_w * d_x. num_in must be a
  // multiple of the group. AWQ's per-input-channel scale is not the kernel's business: the caller multiplies x by
  // it first (model/llama_model.cc).
  MatmulFn matmul_awq_int4_g32 = nullptr;
  MatmulFn matmul_awq_int4_g64 = nullptr;
  MatmulFn matmul_awq_int4_g128 = nullptr;
  MatmulQ8Fn matmul_awq_int4_g32_q8_0 = nullptr;
  MatmulQ8Fn matmul_awq_int4_g64_q8_0 = nullptr;
  MatmulQ8Fn matmul_awq_int4_g128_q8_0 = nullptr;
  // AWQ INT4 of any group repacked into groups of 8 interleaved rows (quant/block_awq_int4x8.h), as Q4_0x8: per row
  // and 32 values an exact sum(q x) - z sum(x), then acc = fma(d_w * d_x, float(isum), acc); every table gives the
  // same bits (not matmul_awq_int4_*'s, whose float sums go in another order). The caller still applies the AWQ
  // input scale to x first.
  MatmulFn matmul_awq_int4x8 = nullptr;
  MatmulQ8Fn matmul_awq_int4x8_q8_0 = nullptr;
  // y = x / rms(x) * weight; x, weight, y: f32 [n]. y may alias x.
  void (*rmsnorm)(const float* x, const float* weight, float* y, int64_t n, float eps) = nullptr;
  // y = quantize_row_q8_0(rmsnorm(x)) in one pass over x, without the f32 row: x, weight: f32 [n] -> y: Q8_0
  // [n / 32]; n a multiple of 32. The same bytes as this table's rmsnorm then quantize_row_q8_0.
  void (*rmsnorm_q8_0)(const float* x, const float* weight, quant::BlockQ8_0* y, int64_t n, float eps) = nullptr;
  // sum_i a[i] * b[i]; f32 [n]
  float (*dot)(const float* a, const float* b, int64_t n) = nullptr;
  // y[i] += a * x[i]; f32 [n]
  void (*axpy)(float a, const float* x, float* y, int64_t n) = nullptr;
  // gate[i] = silu(gate[i]) * up[i]; f32 [n]. Element i's result depends on gate[i] and up[i] only (not on
  // where i falls in a SIMD width), so a thread may apply it to any slice and get the bits of the whole pass.
  void (*silu_mul)(float* gate, const float* up, int64_t n) = nullptr;
  // Paged attention of one (token, KV head) work item over f32 or int8 K/V (kernels/attention_args.h).
  AttentionFn paged_attention = nullptr;
};

// The best table this CPU supports (cpuid), or the one named by the PAGODA_ISA environment variable
// ("scalar" | "avx2") when set, so a run can be pinned to the reference kernels.
const KernelTable& best_kernels();
// A specific table; nullptr when the CPU cannot run it.
const KernelTable* kernels_for(Isa isa);
bool cpu_supports(Isa isa);

}  // namespace pagoda::kernels
