// The avx512 K-quant and 4-bit codebook matmuls (Q2_Kx8 ... Q7_Kx8 and IQ4_XSx8 against q8_K activations; IQ4_NLx8,
// MXFP4x8, Q4_1x8, Q5_1x8 against Q8_0 ones): kernels/kquant_x8_impl.h, codebook_x8_impl.h and
// legacy_x8_impl.h over
// zmm registers holding two 8-row groups side by side (each 512-bit load joins the same 32 bytes of two groups),
// vpdpbusd on 16 rows at once, eight tokens per pass; an odd last group runs through the ymm instantiation.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/codebook_x8_impl.h"
#include "kernels/kquant_x8_impl.h"
#include "kernels/legacy_x8_impl.h"

namespace pagoda::kernels::avx512 {
namespace {

struct V512 {
  using I = __m512i;
  using F = __m512;
  static constexpr int kGroups = 2;
  static I dot(I acc, I u8, I s8) { return _mm512_dpbusd_epi32(acc, u8, s8); }
  static I load(const uint8_t* p, int64_t stride) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + stride));
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
  }
  static F load_ph(const uint16_t* p, int64_t stride) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(p);
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + stride));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1));
  }
  static __m128i load_two_8(const void* p, int64_t stride) {
    const auto* bytes = static_cast<const uint8_t*>(p);
    return _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes)),
                              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + stride)));
  }
  static F load_u8_ps(const uint8_t* p, int64_t stride) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load_two_8(p, stride)));
  }
  static I load_i8(const int8_t* p, int64_t stride) { return _mm512_cvtepi8_epi32(load_two_8(p, stride)); }
  static I load_u8(const uint8_t* p, int64_t stride) { return _mm512_cvtepu8_epi32(load_two_8(p, stride)); }
  static I broadcast4(const int8_t* p) {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }
  static I set1_i8(char c) { return _mm512_set1_epi8(c); }
  static I set1_i32(int32_t v) { return _mm512_set1_epi32(v); }
  static I zero_i() { return _mm512_setzero_si512(); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static I srli16(I a, int n) { return _mm512_srli_epi16(a, n); }
  static I slli16(I a, int n) { return _mm512_slli_epi16(a, n); }
  static I srli32(I a, int n) { return _mm512_srli_epi32(a, n); }
  static I mullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
  static F zero_f() { return _mm512_setzero_ps(); }
  static F set1_f(float v) { return _mm512_set1_ps(v); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static I table16(const int8_t* t) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  static I lookup(I table, I idx) { return _mm512_shuffle_epi8(table, idx); }
  static I abs8(I a) { return _mm512_abs_epi8(a); }
  static I sign8(I x, I w) { return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x); }
  static F half_scale_e8m0(const uint8_t* p, int64_t stride) {
    const __m512i e = _mm512_cvtepu8_epi32(load_two_8(p, stride));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);  // e < 2
    return _mm512_castsi512_ps(
        _mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2)), normal, subnormal));
  }
};

struct EvexDot {
  static __m256i dot(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }
};

constexpr int kTokenGroup = 8;

using Tail = V256<EvexDot>;

}  // namespace

PAGODA_KQUANT_X8_ENTRY_POINTS(V512, Tail, kTokenGroup, quant::quantize_row_q8_K)
PAGODA_CODEBOOK_X8_ENTRY_POINTS(V512, Tail, kTokenGroup, quantize_row_q8_0, quant::quantize_row_q8_K)
PAGODA_LEGACY_X8_ENTRY_POINTS(V512, Tail, kTokenGroup, quantize_row_q8_0)

}  // namespace pagoda::kernels::avx512
