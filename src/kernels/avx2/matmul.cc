// AVX2/FMA matmul for f32, f16 (F16C) and bf16 weights. Each weight row is loaded once per group of up to
// four tokens, so prefill reads the weights num_tokens/4 times instead of num_tokens times; a few rows are summed
// side by side and reduced together in hsum's order.
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

// v, kept in a register: GCC otherwise folds a loaded vector into each FMA that uses it as a memory operand and
// reloads the weight vector for each token.
inline __m256 in_register(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

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

// One level of hsum's order applied to two registers at once: level 1 adds each register's 128-bit halves (a's in
// lanes 0-3, b's in 4-7), levels 2 and 3 add adjacent lanes (hadd). Eight rows' sums folded through the three levels
// come out in lanes (0, 2, 4, 6, 1, 3, 5, 7), each the bits hsum gives its row.
template <int kLevel>
inline __m256 fold_rows(__m256 a, __m256 b) {
  if constexpr (kLevel == 1)
    return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
  return _mm256_hadd_ps(a, b);
}

// in[0..kRows) (each token's) folded from level kLevel up until one register a token is left, into out.
template <int kTokens, int kRows, int kLevel>
__attribute__((always_inline)) inline void fold_block(__m256 (&in)[kRows][kTokens], __m256 (&out)[kTokens]) {
  if constexpr (kRows == 1) {
    for (int t = 0; t < kTokens; ++t) out[t] = in[0][t];
  } else {
    __m256 next[kRows / 2][kTokens];
    for (int r = 0; r < kRows / 2; ++r)
      for (int t = 0; t < kTokens; ++t) next[r][t] = fold_rows<kLevel>(in[2 * r][t], in[2 * r + 1][t]);
    fold_block<kTokens, kRows / 2, kLevel + 1>(next, out);
  }
}

// Rows summed side by side (log2) for kTokens tokens, their accumulators, x vectors and a weight vector in the 16
// ymm registers: the fastest of 2, 4 and 8 rows on the bundled model's shapes (Zen 5 at this level).
template <int kTokens>
inline constexpr int kRowsLog2 = kTokens <= 2 ? 2 : 1;

// out[t] = rows r0 .. r0 + 2^kLevel - 1 of the 8-row group at o0 (rows from nr on: row nr - 1 again, dropped by the
// caller) folded to level kLevel for token t, over the inputs' whole vectors [0, num_vec).
template <class Load, int kTokens, int kLevel>
__attribute__((always_inline)) inline void fold_tree(const void* w, const float* x, int64_t num_in, int64_t num_vec,
                                                     int64_t o0, int r0, int nr, __m256 (&out)[kTokens]) {
  if constexpr (kLevel <= kRowsLog2<kTokens>) {
    constexpr int kRows = 1 << kLevel;
    __m256 acc[kRows][kTokens];
    const void* row[kRows];
    for (int r = 0; r < kRows; ++r) {
      row[r] = Load::address(w, (o0 + (r0 + r < nr ? r0 + r : nr - 1)) * num_in);
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < num_vec; i += 8) {
      __m256 xv[kTokens];
      for (int t = 0; t < kTokens; ++t) xv[t] = in_register(_mm256_loadu_ps(x + t * num_in + i));
      for (int r = 0; r < kRows; ++r) {
        // Measured from the block's last row, so the distance is ahead of everything the block reads.
        if (i % 32 == 0) prefetch_weights_ahead(Load::address(row[r], i + (kRows - 1) * num_in));
        const __m256 wv = in_register(Load::load8(row[r], i));
        for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
      }
    }
    fold_block<kTokens, kRows, 1>(acc, out);
  } else {
    __m256 a[kTokens], b[kTokens];
    fold_tree<Load, kTokens, kLevel - 1>(w, x, num_in, num_vec, o0, r0, nr, a);
    fold_tree<Load, kTokens, kLevel - 1>(w, x, num_in, num_vec, o0, r0 + (1 << (kLevel - 1)), nr, b);
    for (int t = 0; t < kTokens; ++t) out[t] = fold_rows<kLevel>(a[t], b[t]);
  }
}

// y[t * num_out + o0 + r] for r < nr (<= 8) and t < kTokens: the rows' whole vectors in blocks of rows side by side
// (each x vector loaded once for the block), hsum's order through the fold tree, then the tail as
// row_times_tokens adds it: the same bits as row_times_tokens for every row and token. The bundled model's 64-input
// rows spent most of their time in the row-at-a-time loop's per-row hsum.
template <class Load, int kTokens>
inline void rows_times_tokens(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t o0,
                              int nr) {
  const int64_t num_vec = num_in / 8 * 8;
  __m256 sums[kTokens];
  fold_tree<Load, kTokens, 3>(w, x, num_in, num_vec, o0, 0, nr, sums);
  const __m256i row_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int t = 0; t < kTokens; ++t) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_permutevar8x32_ps(sums[t], row_order));
    for (int r = 0; r < nr; ++r) {
      float s = lanes[r];
      for (int64_t i = num_vec; i < num_in; ++i)
        s = __builtin_fmaf(Load::load1(w, (o0 + r) * num_in + i), x[t * num_in + i], s);
      y[t * num_out + o0 + r] = s;
    }
  }
}

template <class Load, int kTokens>
void tokens_pass(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in) {
  // One token's long rows stream from memory (decode): one row at a time keeps the reads sequential.
  if (kTokens == 1 && num_in >= 1024) {
    for (int64_t o = 0; o < num_out; ++o) row_times_tokens<Load, 1>(w, o * num_in, x, y, num_out, num_in, o);
    return;
  }
  for (int64_t o = 0; o < num_out; o += 8)
    rows_times_tokens<Load, kTokens>(w, x, y, num_out, num_in, o, num_out - o < 8 ? int(num_out - o) : 8);
}

// Up to four tokens a pass over the weights.
template <class Load>
void matmul_any(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  for (int64_t t = 0; t < num_tokens; t += 4) {
    const float* xt = x + t * num_in;
    float* yt = y + t * num_out;
    switch (num_tokens - t >= 4 ? 4 : num_tokens - t) {
      case 1: tokens_pass<Load, 1>(w, xt, yt, num_out, num_in); break;
      case 2: tokens_pass<Load, 2>(w, xt, yt, num_out, num_in); break;
      case 3: tokens_pass<Load, 3>(w, xt, yt, num_out, num_in); break;
      default: tokens_pass<Load, 4>(w, xt, yt, num_out, num_in); break;
    }
  }
}

}  // namespace

void matmul_f32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_any<LoadF32>(w, x, y, num_out, num_in, num_tokens);
}
// Prefill-sized calls take matmul_half_tiled.cc's GEMM, which reads each weight once per block of tokens rather than
// once per pass of four; it gives a token the same bits.
void matmul_f16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  if (num_tokens >= kTiledMinTokens) return matmul_f16_tiled(w, x, y, num_out, num_in, num_tokens);
  matmul_any<LoadF16>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  if (num_tokens >= kTiledMinTokens) return matmul_bf16_tiled(w, x, y, num_out, num_in, num_tokens);
  matmul_any<LoadBF16>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx2
