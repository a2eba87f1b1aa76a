// AVX-512 matmul for f32, f16 and bf16 weights: avx2/matmul.cc's loop (each weight row loaded once per group of up
// to four tokens, f32 accumulation) on 16 lanes, the row tail through masked loads. bf16 weights are widened to f32
// exactly (a shift); avx512/bf16/ replaces that with vdpbf16ps where the CPU has AVX512-BF16.
#include <immintrin.h>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"

namespace pagoda::kernels::avx512 {
namespace {

struct LoadF32 {
  static __m512 load(const void* w, int64_t k, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(w) + k);
  }
  static const void* address(const void* w, int64_t k) { return static_cast<const float*>(w) + k; }
};
struct LoadF16 {
  static __m512 load(const void* w, int64_t k, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(w) + k));
  }
  static const void* address(const void* w, int64_t k) { return static_cast<const uint16_t*>(w) + k; }
};
struct LoadBF16 {
  static __m512 load(const void* w, int64_t k, __mmask16 m) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(w) + k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static const void* address(const void* w, int64_t k) { return static_cast<const uint16_t*>(w) + k; }
};

// y[t * num_out + o] = row o . token t for t < kTokens; the tail's masked lanes load zeros on both sides.
template <class Load, int kTokens>
inline void row_times_tokens(const void* w, int64_t row_offset, const float* x, float* y, int64_t num_out,
                             int64_t num_in, int64_t o) {
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < num_in; i += 16) {
    const __mmask16 m = num_in - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (num_in - i)) - 1);
    if (i % 32 == 0) prefetch_weights_ahead<kTokens>(Load::address(w, row_offset + i));
    const __m512 wv = Load::load(w, row_offset + i, m);
    for (int t = 0; t < kTokens; ++t)
      acc[t] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x + t * num_in + i), acc[t]);
  }
  for (int t = 0; t < kTokens; ++t) y[t * num_out + o] = _mm512_reduce_add_ps(acc[t]);
}

template <class Load>
void matmul_any(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  int64_t t = 0;
  for (; t + 4 <= num_tokens; t += 4)
    for (int64_t o = 0; o < num_out; ++o)
      row_times_tokens<Load, 4>(w, o * num_in, x + t * num_in, y + t * num_out, num_out, num_in, o);
  for (; t < num_tokens; ++t)
    for (int64_t o = 0; o < num_out; ++o)
      row_times_tokens<Load, 1>(w, o * num_in, x + t * num_in, y + t * num_out, num_out, num_in, o);
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

}  // namespace pagoda::kernels::avx512
