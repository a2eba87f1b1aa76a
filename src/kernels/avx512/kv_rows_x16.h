// KV cache rows read 16 values at a time for the AVX-512 attention kernels: each KvDType's values converted to f32 in
// registers as they are loaded (vcvtph2ps for f16, a shift for bf16, the block's fp16 scale times its int8 or 4-bit
// values for q8_0 and q4_0), a row's tail through masked loads. Internal linkage: only avx512/ files include it.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/types.h"

namespace pagoda::kernels::avx512 {
namespace {

// Values i .. i + 15 of a row of type T as f32, the lanes of m only (the others 0, their memory not read); i a
// multiple of 16 (an int8 row's values unscaled). q8_0 and q4_0 rows hold whole blocks: m is all lanes there.
template <KvDType T>
inline __m512 kv_load16(const uint8_t* row, int32_t i, __mmask16 m) {
  if constexpr (T == KvDType::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == KvDType::kInt8) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, row + i)));
  } else if constexpr (T == KvDType::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * i));
  } else if constexpr (T == KvDType::kBF16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, row + 2 * i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  } else if constexpr (T == KvDType::kQ8_0) {
    const uint8_t* b = row + int64_t(i / 32) * 34;
    uint16_t d;
    std::memcpy(&d, b, 2);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 + i % 32));
    return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(d)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  } else {
    static_assert(T == KvDType::kQ4_0);
    const uint8_t* b = row + int64_t(i / 32) * 18;
    uint16_t d;
    std::memcpy(&d, b, 2);
    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    if (i % 32 != 0) q = _mm_srli_epi16(q, 4);  // values 16..31: the high nibbles
    q = _mm_and_si128(q, _mm_set1_epi8(0x0f));
    const __m512i v = _mm512_sub_epi32(_mm512_cvtepu8_epi32(q), _mm512_set1_epi32(8));
    return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(d)), _mm512_cvtepi32_ps(v));
  }
}

inline __mmask16 kv_lanes(int32_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }

// dst[0 .. n) = a row's n values as f32.
template <KvDType T>
inline void kv_widen_row(const uint8_t* row, float* dst, int32_t n) {
  for (int32_t i = 0; i < n; i += 16) {
    const __mmask16 m = kv_lanes(n - i);
    _mm512_mask_storeu_ps(dst + i, m, kv_load16<T>(row, i, m));
  }
}

}  // namespace
}  // namespace pagoda::kernels::avx512
