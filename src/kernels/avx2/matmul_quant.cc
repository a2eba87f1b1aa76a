// AVX2 matmul for Q8_0 and Q4_0 weights against Q8_0 activations, the integer inner loop of llama.cpp's
// ggml_vec_dot_q4_0_q8_0 / q8_0_q8_0: per block, |w| (unsigned) times y carrying w's sign via maddubs, pairs
// summed to int32 via madd, then one fma with d_w * d_x. Each weight block is unpacked once per group of up to
// four tokens, and the output rows are walked in tiles that fit in L2, so prefill reads each weight from DRAM
// once while every group of four tokens passes over the tile.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"
#include "quant/block_q4_0.h"

namespace pagoda::kernels::avx2 {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;

// Weight bytes per output-row tile: a quarter of a 512 KiB L2 leaves room for the activations and the outputs.
constexpr int64_t kTileBytes = 128 * 1024;

// Signed int8 [32] of one weight block, in element order.
struct WeightsQ8_0 {
  using Block = BlockQ8_0;
  static __m256i load(const Block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
};
struct WeightsQ4_0 {
  using Block = BlockQ4_0;
  static __m256i load(const Block& b) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    // Low nibbles are elements 0..15, high nibbles 16..31: the shifted copy goes in the upper 128-bit lane.
    const __m256i nibbles =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0f));
    return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
  }
};

// y[t * y_stride] = row . token t for t < kTokens. xq points at the first token's blocks (row stride num_blocks).
// maddubs cannot saturate: activations come from our quantizer (|x| <= 127), and |w| is read as unsigned, so
// even a -128 weight (never written by ggml, possible in a foreign file) gives pairs of at most 2 * 128 * 127 =
// 32512 < 32767.
template <class W, int kTokens>
inline void row_times_tokens(const typename W::Block* w_row, const BlockQ8_0* xq, int64_t num_blocks, float* y,
                             int64_t y_stride) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  auto block = [&](int64_t b) {
    const __m256i qw = W::load(w_row[b]);
    const __m256i abs_w = _mm256_sign_epi8(qw, qw);
    const float dw = _cvtsh_ss(w_row[b].d);
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_0& xb = xq[t * num_blocks + b];
      const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs));
      const __m256i signed_x = _mm256_sign_epi8(qx, qw);
      const __m256i pairs = _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, signed_x), ones);
      const __m256 scale = _mm256_set1_ps(dw * _cvtsh_ss(xb.d));
      acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(pairs), acc[t]);
    }
  };
  // One prefetch per cache line of weights (3 Q4_0 or 1 Q8_0 blocks), then those blocks; the order of the sums
  // is the plain loop's.
  constexpr int64_t kBlocksPerLine = 64 / sizeof(typename W::Block) > 0 ? 64 / sizeof(typename W::Block) : 1;
  int64_t b = 0;
  for (; b + kBlocksPerLine <= num_blocks; b += kBlocksPerLine) {
    prefetch_weights_ahead(w_row + b);
    for (int64_t j = 0; j < kBlocksPerLine; ++j) block(b + j);
  }
  for (; b < num_blocks; ++b) block(b);
  for (int t = 0; t < kTokens; ++t) y[t * y_stride] = hsum(acc[t]);
}

template <class W, int kTokens>
void tile_times_tokens(const typename W::Block* w, const BlockQ8_0* xq, float* y, int64_t y_stride, int64_t num_blocks,
                       int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o)
    row_times_tokens<W, kTokens>(w + o * num_blocks, xq, num_blocks, y + o, y_stride);
}

template <class W>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_quant_row_length(num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const auto* wb = static_cast<const typename W::Block*>(w);
  const int64_t row_bytes = num_blocks * int64_t(sizeof(typename W::Block));
  const int64_t rows_per_tile = row_bytes >= kTileBytes ? 1 : kTileBytes / row_bytes;
  for (int64_t o_begin = 0; o_begin < num_out; o_begin += rows_per_tile) {
    const int64_t o_end = o_begin + rows_per_tile < num_out ? o_begin + rows_per_tile : num_out;
    int64_t t = 0;
    for (; t + 4 <= num_tokens; t += 4)
      tile_times_tokens<W, 4>(wb, xq + t * num_blocks, y + t * y_stride, y_stride, num_blocks, o_begin, o_end);
    // One narrower pass for the 1..3 leftover tokens, not one pass per token.
    const BlockQ8_0* xq_tail = xq + t * num_blocks;
    float* y_tail = y + t * y_stride;
    switch (num_tokens - t) {
      case 3: tile_times_tokens<W, 3>(wb, xq_tail, y_tail, y_stride, num_blocks, o_begin, o_end); break;
      case 2: tile_times_tokens<W, 2>(wb, xq_tail, y_tail, y_stride, num_blocks, o_begin, o_end); break;
      case 1: tile_times_tokens<W, 1>(wb, xq_tail, y_tail, y_stride, num_blocks, o_begin, o_end); break;
      default: break;
    }
  }
}

const BlockQ8_0* quantize_tokens(const float* x, int64_t num_in, int64_t num_tokens) {
  return quantize_activations_q8_0(avx2::quantize_row_q8_0, x, num_in, num_tokens);
}

}  // namespace

void matmul_q8_0_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
                      int64_t y_stride) {
  matmul_xq<WeightsQ8_0>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}

void matmul_q4_0_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
                      int64_t y_stride) {
  matmul_xq<WeightsQ4_0>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}

void matmul_q8_0(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q8_0_q8_0(w, quantize_tokens(x, num_in, num_tokens), y, num_out, num_in, num_tokens, num_out);
}

void matmul_q4_0(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q4_0_q8_0(w, quantize_tokens(x, num_in, num_tokens), y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::avx2
