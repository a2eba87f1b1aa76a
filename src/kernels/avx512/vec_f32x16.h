// F32x16: the 16-lane f32 vector type the shared templates (vector_ops_impl.h, attention_heads_impl.h) are
// instantiated with for AVX-512, F32x8Vl its 8-lane EVEX twin,
// and the zmm forms of the activation quantizers' exact rounding. Internal linkage: only avx512/ files include it.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/kv_rows_x16.h"

namespace pagoda::kernels::avx512 {
namespace {

// exp(x) for x in about [-87, 88]: avx2/simd_util.h's exp_ps (2^n times a degree-6 polynomial) on 16 lanes.
inline __m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3365447504f)), _mm512_set1_ps(88.3762626647949f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

struct F32x16 {
  using Reg = __m512;
  static constexpr int kWidth = 16;
  static Reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg set1(float a) { return _mm512_set1_ps(a); }
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(Reg v) { return _mm512_reduce_add_ps(v); }
  static float hmax(Reg v) { return _mm512_reduce_max_ps(v); }
  static Reg dup_pairs(const float* p) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7),
                                 _mm512_castps256_ps512(_mm256_loadu_ps(p)));
  }
  static Reg swap_pairs(Reg v) { return _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)); }
  static Reg addsub(Reg a, Reg b) { return _mm512_mask_sub_ps(_mm512_add_ps(a, b), __mmask16(0x5555), a, b); }
  static Reg exp(Reg v) { return exp_ps(v); }
  template <KvDType T>
  static void widen_row(const uint8_t* row, float* dst, int32_t n) {
    kv_widen_row<T>(row, dst, n);
  }
};

// The same exp on 8 lanes (a ymm: where a zmm op costs two 256-bit ones, the 8-lane attention's softmax ran slower
// through the zmm form).
inline __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3365447504f)), _mm256_set1_ps(88.3762626647949f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// F32x8Vl: 8 f32 lanes in a ymm register (EVEX-encoded here), for the kernels whose 16-lane form would leave half the
// lanes idle: the heads-in-lanes attention of a group of exactly 8 query heads, clearly faster through it than
// through F32x16 (measured: see the commit that introduced it). avx2/vec_f32x8.h cannot serve here: its helpers are
// inline functions of external linkage, whose one linked copy could then be this folder's EVEX code.
struct F32x8Vl {
  using Reg = __m256;
  static constexpr int kWidth = 8;
  static Reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg set1(float a) { return _mm256_set1_ps(a); }
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg exp(Reg v) { return exp_ps(v); }
  template <KvDType T>
  static void widen_row(const uint8_t* row, float* dst, int32_t n) {
    kv_widen_row<T>(row, dst, n);
  }
};

// roundf(v) clamped to [-127, 127], nan -> 0, as int32 lanes: avx2/simd_util.h's round_half_away_q8 (v - trunc(v)
// is exact, so comparing its magnitude with 0.5 decides as roundf does), then the truncating conversion.
inline __m512i round_half_away_q8(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 away = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 step = _mm512_or_ps(_mm512_and_ps(v, _mm512_set1_ps(-0.0f)), _mm512_set1_ps(1.0f));  // copysign(1, v)
  __m512 r = _mm512_mask_add_ps(t, away, t, step);
  r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, r, _CMP_ORD_Q), r);  // nan -> 0, as in the reference
  r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvttps_epi32(r);
}

}  // namespace
}  // namespace pagoda::kernels::avx512
