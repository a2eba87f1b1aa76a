// Small AVX2 helpers shared by the avx2/ kernels: horizontal sums and max, f16/bf16 loads, a vector exp, and the
// exact roundf of the activation quantizers.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace pagoda::kernels::avx2 {

// Decode streams every weight once from DRAM, and on the machines measured the hardware prefetchers alone keep
// too few lines in flight: a Q4_0 matrix x vector read well under the machine's read-only bandwidth until each kernel
// asked for the line this far ahead of the one it reads, which more than doubled it. 2 KiB beat 1 and 4 KiB.
inline constexpr int64_t kWeightPrefetchBytes = 2048;
inline void prefetch_weights_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kWeightPrefetchBytes, _MM_HINT_T0);
}

// The 4 bytes at p in every 32-bit lane (the repacked kernels' activations, 4 values per row lane).
inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  __m128 shuf = _mm_movehdup_ps(lo);
  __m128 sums = _mm_add_ps(lo, shuf);
  shuf = _mm_movehl_ps(shuf, sums);
  sums = _mm_add_ss(sums, shuf);
  return _mm_cvtss_f32(sums);
}

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float hmax_ps(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// roundf(v) clamped to [-127, 127], nan -> 0, as integers in f32 lanes. v - trunc(v) is exact (Sterbenz), so comparing
// its magnitude with 0.5 decides the rounding exactly as roundf does.
inline __m256 round_half_away_q8(__m256 v) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 away = _mm256_cmp_ps(abs_ps(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign_bit), _mm256_set1_ps(1.0f));  // copysign(1, v)
  __m256 r = _mm256_add_ps(t, _mm256_and_ps(away, step));
  // nan (inf * 0 when amax is inf, or 0 * inf when 1/d overflows) becomes 0, as in the reference.
  r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));
  return _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
}

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m256 load_bf16x8(const uint16_t* p) {
  __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// exp(x) for x in about [-87, 88]: 2^n * p(r) with a degree-6 polynomial on r in [-ln2/2, ln2/2];
// relative error ~2e-7, enough for silu and softmax (the tests compare against std::exp).
inline __m256 exp_ps(__m256 x) {
  const __m256 max_x = _mm256_set1_ps(88.3762626647949f);
  const __m256 min_x = _mm256_set1_ps(-87.3365447504f);
  x = _mm256_min_ps(_mm256_max_ps(x, min_x), max_x);
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693359375f);
  const __m256 ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, ln2_hi, x);
  r = _mm256_fnmadd_ps(n, ln2_lo, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// sum q[i] * k[i] over n values, k's eight at a time through `load` (f32 as is, int8 widened): two accumulators
// of 16 values, then 8, then a scalar tail. avx2::dot and the attention kernel's dots are this one loop, so they
// give the same bits.
template <class T, class Load>
inline float dot_with(const float* q, const T* k, int64_t n, Load load) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load(k + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load(k + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load(k + i), acc0);
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += q[i] * float(k[i]);
  return sum;
}

// Loads for dot_with and its kin, as function objects (a type each, so the call inlines).
inline constexpr auto load_f32x8 = [](const float* x) { return _mm256_loadu_ps(x); };
inline constexpr auto load_i8x8 = [](const int8_t* x) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))));
};

}  // namespace pagoda::kernels::avx2
