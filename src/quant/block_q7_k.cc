// Reference dequantization of pagoda's in-memory Q7_K carrier super-blocks.
#include "quant/block_q7_k.h"

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {

void dequantize_row_q7_K(const BlockQ7_K* x, float* y, int64_t n) {
  PAGODA_CHECK(n % kQK_K == 0, "Q7_K rows hold whole super-blocks of {} values, got {}", kQK_K, n);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int i = 0; i < kQK_K; ++i) *y++ = d * float(x[b].scales[i / 16]) * float(int(x[b].q[i]) - kQ7Offset);
  }
}

}  // namespace pagoda::quant
