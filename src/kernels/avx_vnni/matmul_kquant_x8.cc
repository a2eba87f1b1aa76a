// The vpdpbusd K-quant matmuls (Q4_Kx8, Q5_Kx8, Q6_Kx8 against Q8_0 activations): kernels/kquant_x8_impl.h with
// this compilation's vpdpbusd and token group (vnni_util.h: 4 tokens per pass with the VEX encoding's 16 registers,
// 8 with the EVEX one's 32).
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx_vnni/avx_vnni_kernels.h"
#include "kernels/avx_vnni/vnni_util.h"
#include "kernels/kquant_x8_impl.h"

namespace pagoda::kernels::PAGODA_KERNEL_NS {
namespace {

struct VnniDot {
  static __m256i dot(__m256i acc, __m256i u8, __m256i s8) { return dpbusd(acc, u8, s8); }
};
using V = V256<VnniDot>;

template <class Block>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  kquant_x8_matmul_xq<V, V, kTokenGroup, Block>(
      w, quantize_activations_q8_0(avx2::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in, num_tokens,
      num_out);
}

}  // namespace

#define PAGODA_VNNI_KQUANT(name, Block)                                                                              \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    matmul_f32_in<quant::Block>(w, x, y, num_out, num_in, num_tokens);                                               \
  }                                                                                                                  \
  void matmul_##name##_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,    \
                            int64_t num_tokens, int64_t y_stride) {                                                  \
    kquant_x8_matmul_xq<V, V, kTokenGroup, quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);           \
  }
PAGODA_VNNI_KQUANT(q4_Kx8, BlockQ4_Kx8)
PAGODA_VNNI_KQUANT(q5_Kx8, BlockQ5_Kx8)
PAGODA_VNNI_KQUANT(q6_Kx8, BlockQ6_Kx8)
#undef PAGODA_VNNI_KQUANT

}  // namespace pagoda::kernels::PAGODA_KERNEL_NS
