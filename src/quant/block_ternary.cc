// Reference dequantization of ggml's TQ1_0 and TQ2_0 super-blocks (scalar), with ggml's f32 operations: the integer
// t - 1 converted, then one product with d.
#include "quant/block_ternary.h"

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {

void tq1_0_trits(const BlockTQ1_0& b, uint8_t t[kQK_K]) {
  for (int n = 0; n < 5; ++n) {
    for (int m = 0; m < 32; ++m) t[32 * n + m] = uint8_t(tq1_0_trit(b.qs[m], n));
    for (int m = 0; m < 16; ++m) t[160 + 16 * n + m] = uint8_t(tq1_0_trit(b.qs[32 + m], n));
  }
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) t[240 + 4 * n + j] = uint8_t(tq1_0_trit(b.qh[j], n));
}

void dequantize_row_tq1_0(const BlockTQ1_0* x, float* y, int64_t n) {
  PAGODA_CHECK(n % kQK_K == 0, "TQ1_0 rows hold whole super-blocks of {} values, got {}", kQK_K, n);
  uint8_t t[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    tq1_0_trits(x[b], t);
    for (int i = 0; i < kQK_K; ++i) *y++ = float(int(t[i]) - 1) * d;
  }
}

void dequantize_row_tq2_0(const BlockTQ2_0* x, float* y, int64_t n) {
  PAGODA_CHECK(n % kQK_K == 0, "TQ2_0 rows hold whole super-blocks of {} values, got {}", kQK_K, n);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int h = 0; h < 2; ++h)
      for (int g = 0; g < 4; ++g)
        for (int l = 0; l < 32; ++l) *y++ = float(((x[b].qs[32 * h + l] >> (2 * g)) & 3) - 1) * d;
  }
}

}  // namespace pagoda::quant
