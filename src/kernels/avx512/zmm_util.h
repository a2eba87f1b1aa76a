// Helpers of the avx512/ kernels: 4-byte broadcasts into zmm, tokens per pass, the weight prefetch, a vector pinned
// to a register, the sums of 16 registers' lanes at once (whole, or a level of the tree at a time). Internal linkage
// (an unnamed namespace), so no copy compiled with -mavx512* is ever merged with another folder's.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace pagoda::kernels::avx512 {
namespace {

// Tokens per pass over a weight block: an int32 and an f32 accumulator each, 16 of the 32 zmm registers.
inline constexpr int kTokenGroup = 8;

// The 4 bytes at p in every 32-bit lane.
inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// How far ahead of the weight read to prefetch. The 16-row kernels read Q4_0 fast enough that the other levels'
// 2 KiB (avx2/simd_util.h) is covered in less time than a DRAM access takes, so decode-sized calls (1-2 tokens,
// the weights streamed from DRAM) reach 4 KiB ahead. Larger token groups, whose tiles come from L2, keep 2 KiB:
// 4 KiB slowed their prefill. The measurements are in the commit that set these distances.
template <int kTokens>
inline constexpr int64_t kWeightPrefetchBytes = kTokens <= 2 ? 4096 : 2048;
// Always inlined: GCC may otherwise judge the call free of effects and drop it before inlining (it did, from
// matmul_float.cc's row blocks).
template <int kTokens>
__attribute__((always_inline)) inline void prefetch_weights_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kWeightPrefetchBytes<kTokens>, _MM_HINT_T0);
}

// v, kept in a register: GCC otherwise folds a loaded vector into each FMA that uses it as a memory operand and
// reloads the weight vector for each (two loads an FMA, which held 1-4 tokens to one FMA a cycle; with the vectors in
// registers they reach two).
inline __m512 in_register(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// One level of transpose_sum16's tree: level 1 folds two registers (a, b), level 2 two such folds, levels 3 and 4
// two of those. Lane k of a fold comes from its k-th register only (matmul_float.cc folds rows as they finish).
template <int kLevel>
inline __m512 fold_rows(__m512 a, __m512 b) {
  if constexpr (kLevel == 1) return _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  if constexpr (kLevel == 2)
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Lane k of the result = the sum of the 16 lanes of a[k]. Pairs of registers fold into one at each step, the 128-bit
// lane t of a[k] holding the row's quarter t: b[k] lane (t, r) = key 2k + (r & 1)'s half of quarter t; c[k] lane
// (t, r) = key 4k + r over quarter t; d[k] lanes 0, 1 = keys 8k..8k+3 over quarters (0, 1) and (2, 3), lanes 2, 3 =
// keys 8k+4..8k+7 likewise; then lane t = keys 4t..4t+3 over the whole row.
inline __m512 transpose_sum16(const __m512 (&a)[16]) {
  __m512 b[8];
  for (int k = 0; k < 8; ++k) b[k] = fold_rows<1>(a[2 * k], a[2 * k + 1]);
  __m512 c[4];
  for (int k = 0; k < 4; ++k) c[k] = fold_rows<2>(b[2 * k], b[2 * k + 1]);
  __m512 d[2];
  for (int k = 0; k < 2; ++k) d[k] = fold_rows<3>(c[2 * k], c[2 * k + 1]);
  return fold_rows<4>(d[0], d[1]);
}

}  // namespace
}  // namespace pagoda::kernels::avx512
