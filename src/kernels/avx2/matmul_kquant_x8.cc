// The AVX2 K-quant matmuls (Q4_Kx8, Q5_Kx8, Q6_Kx8 against Q8_0 activations): kernels/kquant_x8_impl.h with maddubs
// + madd as the u8 x s8 dot product (exact: a weight of at most 63 times two activations of at most 128 stays inside
// int16) and four tokens per pass (16 ymm registers).
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/kquant_x8_impl.h"

namespace pagoda::kernels::avx2 {
namespace {

struct MaddubsDot {
  static __m256i dot(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }
};
using V = V256<MaddubsDot>;
constexpr int kTokenGroup = 4;

template <class Block>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  kquant_x8_matmul_xq<V, V, kTokenGroup, Block>(w, quantize_activations_q8_0(quantize_row_q8_0, x, num_in, num_tokens),
                                                y, num_out, num_in, num_tokens, num_out);
}

}  // namespace

#define PAGODA_AVX2_KQUANT(name, Block)                                                                              \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    matmul_f32_in<quant::Block>(w, x, y, num_out, num_in, num_tokens);                                               \
  }                                                                                                                  \
  void matmul_##name##_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,    \
                            int64_t num_tokens, int64_t y_stride) {                                                  \
    kquant_x8_matmul_xq<V, V, kTokenGroup, quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);           \
  }
PAGODA_AVX2_KQUANT(q4_Kx8, BlockQ4_Kx8)
PAGODA_AVX2_KQUANT(q5_Kx8, BlockQ5_Kx8)
PAGODA_AVX2_KQUANT(q6_Kx8, BlockQ6_Kx8)
#undef PAGODA_AVX2_KQUANT

}  // namespace pagoda::kernels::avx2
