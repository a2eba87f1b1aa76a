// F32x8: the 8-lane f32 vector type the shared templates (vector_ops_impl.h) are instantiated with for AVX2.
// Internal linkage: only avx2/ files include it.
#pragma once

#include <immintrin.h>

#include "kernels/avx2/kv_rows_x8.h"
#include "kernels/avx2/simd_util.h"

namespace pagoda::kernels::avx2 {
namespace {

struct F32x8 {
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
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(Reg v) { return avx2::hsum(v); }
  static float hmax(Reg v) { return hmax_ps(v); }
  static Reg dup_pairs(const float* p) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)), _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
  }
  static Reg swap_pairs(Reg v) { return _mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)); }
  static Reg addsub(Reg a, Reg b) { return _mm256_addsub_ps(a, b); }
  static Reg exp(Reg v) { return exp_ps(v); }
  template <KvDType T>
  static void widen_row(const uint8_t* row, float* dst, int32_t n) {
    kv_widen_row<T>(row, dst, n);
  }
};

}  // namespace
}  // namespace pagoda::kernels::avx2
