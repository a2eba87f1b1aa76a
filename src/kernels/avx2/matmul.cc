// AVX2/FMA matmul for f32, f16 (F16C) and bf16 weights. Each weight row is loaded once per group of up to
// four tokens, so prefill reads the weights num_tokens/4 times instead of num_tokens times.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"

namespace pagoda::kernels::avx2 {
namespace {

// Scalar tail loads, defined here rather than taken from core/half.h: an inline function compiled in this
// -mavx2 file could be the copy the linker keeps for every caller, and crash a CPU without AVX2.
inline float half_tail(uint16_t h) { return _cvtsh_ss(h); }
inline float bf16_tail(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

struct LoadF32 {
  static __m256 load8(const void* w, int64_t k) { return _mm256_loadu_ps(static_cast<const float*>(w) + k); }
  static float load1(const void* w, int64_t k) { return static_cast<const float*>(w)[k]; }
  static const void* address(const void* w, int64_t k) { return static_cast<const float*>(w) + k; }
};
struct LoadF16 {
  static __m256 load8(const void* w, int64_t k) { return load_f16x8(static_cast<const uint16_t*>(w) + k); }
  static float load1(const void* w, int64_t k) { return half_tail(static_cast<const uint16_t*>(w)[k]); }
  static const void* address(const void* w, int64_t k) { return static_cast<const uint16_t*>(w) + k; }
};
struct LoadBF16 {
  static __m256 load8(const void* w, int64_t k) { return load_bf16x8(static_cast<const uint16_t*>(w) + k); }
  static float load1(const void* w, int64_t k) { return bf16_tail(static_cast<const uint16_t*>(w)[k]); }
  static const void* address(const void* w, int64_t k) { return static_cast<const uint16_t*>(w) + k; }
};

template <class Load, int kTokens>
inline void row_times_tokens(const void* w, int64_t row_offset, const float* x, float* y, int64_t num_out,
                             int64_t num_in, int64_t o) {
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= num_in; i += 8) {
    if (i % 32 == 0) prefetch_weights_ahead(Load::address(w, row_offset + i));  // a line of f16, half of f32
    const __m256 wv = Load::load8(w, row_offset + i);
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + t * num_in + i), acc[t]);
  }
  float sums[kTokens];
  for (int t = 0; t < kTokens; ++t) sums[t] = hsum(acc[t]);
  // An explicit fma, so a token's sum is the same whichever kTokens it was computed with: left to the
  // compiler, the contraction of `s += w * x` can differ between instantiations, and then a token's logits
  // would depend on its neighbours in the batch (a prefix-cache hit must never change an answer).
  for (; i < num_in; ++i) {
    const float wi = Load::load1(w, row_offset + i);
    for (int t = 0; t < kTokens; ++t) sums[t] = __builtin_fmaf(wi, x[t * num_in + i], sums[t]);
  }
  for (int t = 0; t < kTokens; ++t) y[t * num_out + o] = sums[t];
}

template <class Load>
void matmul_any(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  int64_t t = 0;
  for (; t + 4 <= num_tokens; t += 4) {
    for (int64_t o = 0; o < num_out; ++o)
      row_times_tokens<Load, 4>(w, o * num_in, x + t * num_in, y + t * num_out, num_out, num_in, o);
  }
  for (; t < num_tokens; ++t) {
    for (int64_t o = 0; o < num_out; ++o)
      row_times_tokens<Load, 1>(w, o * num_in, x + t * num_in, y + t * num_out, num_out, num_in, o);
  }
}

}  // namespace

void matmul_f32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_any<LoadF32>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_f16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_any<LoadF16>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_any<LoadBF16>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx2
