// KernelTable: the hot ops of the forward pass, one function pointer per op and weight dtype. One instance per
// instruction-set level is filled once per process (dispatch.cc, from the per-weight-type traits of
// kernel_registry.cc); callers hold a reference and make one indirect call per op. Every entry has a scalar
// reference twin (ref/) that the tests compare against.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/types.h"
#include "kernels/attention_args.h"
#include "quant/block_q8_0.h"
#include "quant/block_q8_K.h"

namespace pagoda::kernels {

// Instruction-set levels, each a superset of the one before: scalar (the reference kernels); avx2 (+FMA, F16C);
// avx_vnni (+256-bit vpdpbusd: AVX-VNNI, or the same instruction in its AVX512-VL/VNNI encoding on CPUs such as
// Zen 4 that have that and not AVX-VNNI); avx512 (F/BW/VL/DQ + VNNI, BF16 where present); amx (AMX-INT8
// tiles for INT8 weights in prefill-sized calls, which need Linux's permission for the tile state).
enum class Isa : uint8_t { kScalar, kAvx2, kAvxVnni, kAvx512, kAmx };
inline constexpr int kNumIsas = 5;
// The widest gated DeltaNet head a kernel takes (Qwen3.5's are 128).
inline constexpr int32_t kMaxDeltaNetHeadDim = 512;
// The tokens of one chunk of gated_delta_net_chunked: its intra-chunk matrices are kDeltaNetChunk square.
inline constexpr int64_t kDeltaNetChunk = 64;
std::string_view isa_name(Isa isa);                   // "scalar" | "avx2" | "avx_vnni" | "avx512" | "amx"
std::optional<Isa> parse_isa(std::string_view name);  // the inverse; nullopt for any other name

// y[t][o] = sum_i w[o][i] * x[t][i] for t < num_tokens, o < num_out. w: [num_out, num_in] row-major in the
// weight dtype; x: f32 [num_tokens, num_in]; y: f32 [num_tokens, num_out] (row stride num_out).
using MatmulFn = void (*)(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens);
// The same product with the activations already quantized: xq: Q8_0 [num_tokens, num_in / 32] blocks; token t's
// outputs go to y[t * y_stride + o], so a thread can compute a slice of the rows for every token.
using MatmulQ8Fn = void (*)(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                            int64_t num_tokens, int64_t y_stride);
// The same for the K-quants' activations: xq: q8_K [num_tokens, num_in / 256] blocks.
using MatmulQ8KFn = void (*)(const void* w, const quant::BlockQ8_K* xq, float* y, int64_t num_out, int64_t num_in,
                             int64_t num_tokens, int64_t y_stride);
// The same for per-token INT8 activations: xq: int8 [num_tokens, num_in], token t's values are xq[t * num_in + i]
// * x_scales[t] (quant/row_int8.h).
using MatmulInt8Fn = void (*)(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                              int64_t num_in, int64_t num_tokens, int64_t y_stride);

// The element-wise and attention ops, the part of a table that does not depend on a weight dtype.
struct VectorKernels {
  // x: f32 [n] -> y: Q8_0 [n / 32]; n a multiple of 32. Every table's version writes the same bytes as
  // quant::quantize_row_q8_0 for any x without nan, so scalar and SIMD matmuls see identical integers.
  void (*quantize_row_q8_0)(const float* x, quant::BlockQ8_0* y, int64_t n) = nullptr;
  // x: f32 [n] -> y: q8_K [n / 256]; n a multiple of 256. The same bytes as quant::quantize_row_q8_K for any x without
  // nan: what every K-quant matmul reads.
  void (*quantize_row_q8_K)(const float* x, quant::BlockQ8_K* y, int64_t n) = nullptr;
  // x: f32 [n] -> q: int8 [n], returns the scale; the same bytes as quant::quantize_int8_values for x without nan.
  float (*quantize_row_int8)(const float* x, int8_t* q, int64_t n) = nullptr;
  // A token's K or V row into the cache: x: f32 [n] -> `row` in `type` (not kInt8), the bytes quant/kv_row.h's
  // quantize_kv_row writes, nans included; n a multiple of kv_dtype_block_values(type).
  void (*quantize_kv_row)(KvDType type, const float* x, int32_t n, uint8_t* row) = nullptr;
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
  // gate[i] = gelu_tanh(gate[i]) * up[i] (GELU's tanh approximation, Gemma's GeGLU); elementwise as silu_mul.
  void (*gelu_mul)(float* gate, const float* up, int64_t n) = nullptr;
  // gpt-oss's clamped SwiGLU (ggml's swiglu_oai): with x = min(gate[i], limit) and y = clamp(up[i], -limit, limit),
  // gate[i] = x * sigmoid(alpha * x) * (y + 1); elementwise as silu_mul.
  void (*swiglu_oai_mul)(float* gate, const float* up, int64_t n, float alpha, float limit) = nullptr;
  // Paged attention of one (token, KV head) work item over f32 or int8 K/V (kernels/attention_args.h).
  AttentionFn paged_attention = nullptr;
  // y = softmax(x): y[i] = exp(x[i] - max) * (1 / sum_j exp(x[j] - max)); x, y: f32 [n], n >= 1, x finite; y may
  // alias x. SIMD tables use a vector exp (within ~2e-7 relative of expf; values below exp(-87) come out as ~1e-38
  // rather than 0), so they agree with the scalar one to a few ulp, not bit for bit.
  void (*softmax)(const float* x, float* y, int64_t n) = nullptr;
  // RoPE of num_heads heads: in, out f32 [num_heads, head_dim] (out may alias in). Pair i < half_rope of a head, the
  // dims (2i, 2i+1), or with neox (i, i + half_rope), rotates by the angle whose cosine and sine are cs[i], sn[i]:
  // (a, b) -> (a cs - b sn, a sn + b cs); the dims from 2 * half_rope on are copied (partial rotary). Each product is
  // rounded before the sum (no fma), so every table gives the scalar one's bits.
  void (*rope)(const float* in, float* out, int32_t num_heads, int32_t head_dim, int32_t half_rope, const float* cs,
               const float* sn, bool neox) = nullptr;
  // A depthwise causal convolution of num_taps taps over num_tokens consecutive inputs of one sequence (LFM2's short
  // convolution): y[t][c] = sum_k taps[k][c] * w[t + k][c] over the window w = the state's num_taps - 1 earlier
  // inputs, then x, summed oldest first (ggml_ssm_conv's order); the state ends as the last num_taps - 1 inputs.
  // taps f32 [num_taps][dim]; state f32 [num_taps - 1][dim], oldest first, in and out; x, y f32 [num_tokens][dim]
  // (y may alias x). Channels are independent, so every table gives the scalar one's bits.
  void (*short_conv)(const float* taps, float* state, const float* x, float* y, int64_t dim, int32_t num_taps,
                     int64_t num_tokens) = nullptr;
  // Gated DeltaNet's recurrence for one value head over num_tokens consecutive tokens of one sequence (Qwen3.5's
  // linear attention, ggml_gated_delta_net's order). The head's state S [head_dim keys][head_dim values] is stored
  // transposed: state[j * head_dim + i] = S[i][j]. Per token t, with q, k (L2-normed), v rows at t * qkv_stride and
  // the scalars g (log decay) and beta at t * gate_stride: S *= exp(g); delta = (v - S^T k) * beta; S += k delta^T;
  // out[t * out_stride ..] = scale * S^T q. head_dim at most kMaxDeltaNetHeadDim.
  void (*gated_delta_net)(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride,
                          const float* g, const float* beta, int64_t gate_stride, float* out, int64_t out_stride,
                          int32_t head_dim, int64_t num_tokens, float scale) = nullptr;
  // The same recurrence over a prefill's tokens in chunks of kDeltaNetChunk (the WY/UT form of flash-linear-attention
  // and llama.cpp's chunked path): within a chunk, with G[t] the sum of g from the chunk's start through t and
  // A[t][s] = beta[t] exp(G[t] - G[s]) k[t].k[s] for s < t, the deltas solve (I + A) U = beta (V - exp(G) K S0), so
  // U = T beta V - T beta exp(G) K S0 with T = (I + A)^-1 (forward substitution); then
  // out[t] = scale (exp(G[t]) S0^T q[t] + sum_{s <= t} exp(G[t] - G[s]) (q[t].k[s]) U[s]) and
  // S = exp(G[last]) S0 + sum_s exp(G[last] - G[s]) k[s] U[s]^T carries to the next chunk. Arguments as
  // gated_delta_net's; g <= 0 (a decay). Equal to it within float rounding, not bit for bit, and not to itself when
  // a sequence is cut at other places (its chunks then differ).
  void (*gated_delta_net_chunked)(float* state, const float* q, const float* k, const float* v, int64_t qkv_stride,
                                  const float* g, const float* beta, int64_t gate_stride, float* out,
                                  int64_t out_stride, int32_t head_dim, int64_t num_tokens, float scale) = nullptr;
};

// A weight dtype's matmul entry points (null where a form does not exist for it): on f32 activations (any dtype,
// quantizing them itself where it needs to), on activations already quantized to Q8_0 (the dtypes whose kernels
// read Q8_0), on per-token INT8 activations (the INT8 dtypes), on q8_K activations (the K-quants and IQ4_XS, as
// ggml's).
struct MatmulKernels {
  MatmulFn f32 = nullptr;
  MatmulQ8Fn q8_0 = nullptr;
  MatmulInt8Fn int8 = nullptr;
  MatmulQ8KFn q8_K = nullptr;
};

struct KernelTable : VectorKernels {
  Isa isa = Isa::kScalar;
  // Indexed by the weight's in-memory dtype. Contracts per dtype:
  // - f32, f16, bf16: f32 accumulation, and a token's result never depends on the tokens beside it (speculative
  //   verification must give the bits of plain decoding); the AVX512-BF16 table rounds the activations to bf16 for
  //   bf16 weights (vdpbf16ps), so its bf16 results differ from the scalar ones by that rounding.
  // - Q8_0, Q4_0 (GGUF's blocks, [num_out, num_in / 32] row-major; num_in a multiple of 32): each token row of x
  //   is quantized to Q8_0 once, into a grow-only thread_local scratch (no heap allocation on a steady-state
  //   step), and each output is an integer dot product scaled per block. The q8_0 form takes activations the
  //   caller quantized (with quantize_row_q8_0 above), so a thread pool can quantize x once and split the rows,
  //   and RMSNorm can fuse the quantization; token t's outputs go to y[t * y_stride + o].
  // - Q4_0x8, Q8_0x8, AWQ INT4x8 (8 interleaved rows, quant/block_*x8.h, made at model load; num_out a multiple of
  //   8, w the group of the first row): per row and block an exact integer dot product, then
  //   acc = fma(d_w * d_x, float(isum), acc) in block order, so every table gives the same bits (not the plain
  //   layout's, whose float sums go in another order) and a token's result never depends on the tokens beside
  //   it. AWQ's per-input-channel scale is the caller's (model/llama_model.cc multiplies x by it first).
  // - Q2_K ... Q6_K and their 8-row interleaved layouts (quant/block_kquant_x8.h): activations as q8_K (one f32
  //   scale per 256 values, quantize_row_q8_K above), as ggml's; per row and super-block an exact int32 sum over
  //   its sub-blocks with the weight's integer scales (and mins), then one float step each (ref/matmul_kquant.cc),
  //   so every table gives the same bits; the q8_K form takes activations the caller quantized, as q8_0's does.
  // - Q4_1, Q5_1 (GGUF's blocks) and their 8-row interleaved layouts (quant/block_legacy_x8.h): Q8_0 activations,
  //   per row and block exact integer sums of q x and of x, then acc = fma(d_w * d_x, float(sum(q x)), acc) and
  //   acc = fma(m_w, d_x * float(sum(x)), acc) in block order (ggml's vec_dot_q4_1_q8_1 with q8_1's activation sum
  //   unrounded; ref/matmul_legacy.cc), so every table gives the same bits.
  // - INT8 and INT8x8 (quant/row_int8.h, row_int8x8.h; per-channel weights against per-token INT8 activations,
  //   W8A8): y = float(sum_i w_q * x_q) * (w_scale * x_scale), exact in int32, the same bits in every table.
  // - AWQ INT4 groups of 32/64/128 (quant/block_awq_int4.h): per 32-value sub-block an integer dot product of
  //   (q - zero) with the activations, scaled by d_w * d_x.
  std::array<MatmulKernels, kNumDTypes> matmul{};
  // The in-memory layout each weight dtype is best multiplied in with this table (model/weight_repack.cc rewrites
  // a matrix into it at load), best first; a layout whose row groups do not divide the matrix is skipped, and a
  // dtype with none stays as it is.
  std::array<std::array<std::optional<DType>, 2>, kNumDTypes> layouts{};

  const MatmulKernels& matmul_for(DType dtype) const { return matmul[size_t(dtype)]; }
};

// The best table this CPU supports (cpuid), or the one named by the PAGODA_ISA environment variable
// (scalar | avx2 | avx_vnni | avx512 | amx) when set, so a run can be pinned to a level; a level the CPU lacks gets
// a one-line message on stderr and the best one available.
const KernelTable& best_kernels();
// A specific level's table; nullptr when the CPU (or the OS: AVX-512 state, AMX tile permission) cannot run it.
const KernelTable* kernels_for(Isa isa);
bool cpu_supports(Isa isa);
// The best level this CPU supports, ignoring PAGODA_ISA.
Isa best_supported_isa();
// One line naming the level in use and the CPU's relevant features, for start-up messages:
// "avx512 kernels (cpu: avx2 fma f16c avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16)".
std::string isa_summary(const KernelTable& table);

}  // namespace pagoda::kernels
