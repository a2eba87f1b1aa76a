// AVX2 KV row stores (KernelTable::quantize_kv_row): a token's f32 K or V row written into the cache as f16 (F16C)
// or bf16 (integer rounding), eight values a step; every other type, a step holding a nan, and a row's last 1..7
// values go through quant/kv_row.h's scalar writer. Each row gets the bytes quantize_kv_row gives it.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "quant/kv_row.h"

namespace pagoda::kernels::avx2 {
namespace {

// A nan keeps its payload through F16C and the bf16 rounding below; the scalar writer makes every nan one quiet nan.
inline bool has_nan(__m256 v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }

// Eight values a step through `convert` (8 floats -> 8 16-bit values), a step holding a nan and the row's last 1..7
// values through the scalar writer of `type`.
template <class Convert>
void store_16bit(KvDType type, const float* x, int32_t n, uint8_t* row, Convert convert) {
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    if (has_nan(v)) {
      pagoda::quantize_kv_row(type, x + i, 8, row + 2 * int64_t(i));
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 2 * int64_t(i)), convert(v));
  }
  if (i < n) pagoda::quantize_kv_row(type, x + i, n - i, row + 2 * int64_t(i));
}

// f16 with ties to even, as float_to_fp16 rounds (overflow to inf from 65520 on, subnormals exact).
inline __m128i to_f16(__m256 v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

// bf16 with ties to even: the high half of bits + 0x7fff + (bit 16), as float_to_bf16 computes it.
inline __m128i to_bf16(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i high = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd)), 16);
  // Each 32-bit lane holds at most 0xffff, so the unsigned-saturating pack keeps it; it packs within 128-bit halves.
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(high, high), 0x08));
}

}  // namespace

void quantize_kv_row(KvDType type, const float* x, int32_t n, uint8_t* row) {
  if (type == KvDType::kF16) return store_16bit(type, x, n, row, [](__m256 v) { return to_f16(v); });
  if (type == KvDType::kBF16) return store_16bit(type, x, n, row, [](__m256 v) { return to_bf16(v); });
  pagoda::quantize_kv_row(type, x, n, row);
}

}  // namespace pagoda::kernels::avx2
