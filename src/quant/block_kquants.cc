// Reference dequantization of ggml's K-quant super-blocks (scalar; the test oracle for any faster path). Each
// function follows ggml's arithmetic operation for operation (which products are formed first, in which order),
// so the floats are the same bits; the traversal is written out from the layout in block_kquants.h.
#include "quant/block_kquants.h"

#include "core/check.h"
#include "core/half.h"

namespace pagoda::quant {
namespace {

void check_row(int64_t n, const char* type) {
  PAGODA_CHECK(n % kQK_K == 0, "{} rows hold whole super-blocks of {} values, got {}", type, kQK_K, n);
}

}  // namespace

void q3_K_scales(const uint8_t* packed, int scales[16]) {
  for (int s = 0; s < 16; ++s) {
    const int low = (packed[s % 8] >> (4 * (s / 8))) & 0x0f;
    const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 0x03;
    scales[s] = (low | high << 4) - 32;
  }
}

void kquant_scale_min(const uint8_t* scales, int j, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = scales[j] & 63;
    *min = scales[j + 4] & 63;
  } else {
    *scale = uint8_t((scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4));
    *min = uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

void dequantize_row_q2_K(const BlockQ2_K* x, float* y, int64_t n) {
  check_row(n, "Q2_K");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    const float dmin = fp16_to_float(x[b].dmin);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = x[b].qs + 32 * h;
      for (int g = 0; g < 4; ++g) {
        for (int half = 0; half < 2; ++half) {  // the two 16-value sub-blocks of this bit pair
          const uint8_t sc = x[b].scales[8 * h + 2 * g + half];
          const float dl = d * float(sc & 0x0f);
          const float ml = dmin * float(sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * float((q[16 * half + l] >> (2 * g)) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_row_q3_K(const BlockQ3_K* x, float* y, int64_t n) {
  check_row(n, "Q3_K");
  int scales[16];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    q3_K_scales(x[b].scales, scales);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = x[b].qs + 32 * h;
      for (int g = 0; g < 4; ++g) {
        const int high_bit = 4 * h + g;
        for (int half = 0; half < 2; ++half) {
          const float dl = d * float(scales[8 * h + 2 * g + half]);
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int low = (q[l] >> (2 * g)) & 3;
            const int high = (x[b].hmask[l] >> high_bit) & 1;
            *y++ = dl * float(low - (high ? 0 : 4));
          }
        }
      }
    }
  }
}

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n) {
  check_row(n, "Q4_K");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    const float dmin = fp16_to_float(x[b].dmin);
    for (int p = 0; p < 4; ++p) {
      const uint8_t* q = x[b].qs + 32 * p;
      uint8_t sc = 0, m = 0;
      kquant_scale_min(x[b].scales, 2 * p, &sc, &m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      kquant_scale_min(x[b].scales, 2 * p + 1, &sc, &m);
      const float d2 = d * float(sc), m2 = dmin * float(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0x0f) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
    }
  }
}

void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n) {
  check_row(n, "Q5_K");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    const float dmin = fp16_to_float(x[b].dmin);
    for (int p = 0; p < 4; ++p) {
      const uint8_t* q = x[b].qs + 32 * p;
      uint8_t sc = 0, m = 0;
      kquant_scale_min(x[b].scales, 2 * p, &sc, &m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      kquant_scale_min(x[b].scales, 2 * p + 1, &sc, &m);
      const float d2 = d * float(sc), m2 = dmin * float(m);
      for (int l = 0; l < 32; ++l) {
        const int fifth = (x[b].qh[l] >> (2 * p)) & 1;
        *y++ = d1 * float((q[l] & 0x0f) + 16 * fifth) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int fifth = (x[b].qh[l] >> (2 * p + 1)) & 1;
        *y++ = d2 * float((q[l] >> 4) + 16 * fifth) - m2;
      }
    }
  }
}

void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n) {
  check_row(n, "Q6_K");
  for (int64_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
    const float d = fp16_to_float(x[b].d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[b].ql + 64 * h;
      const uint8_t* qh = x[b].qh + 32 * h;
      const int8_t* sc = x[b].scales + 8 * h;
      float* yh = y + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q1 = ((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32;
        const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
        const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
        // (d * scale) * q, left to right as ggml writes it.
        yh[l] = d * float(sc[s]) * float(q1);
        yh[l + 32] = d * float(sc[s + 2]) * float(q2);
        yh[l + 64] = d * float(sc[s + 4]) * float(q3);
        yh[l + 96] = d * float(sc[s + 6]) * float(q4);
      }
    }
  }
}

void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n) {
  check_row(n, "Q8_K");
  for (int64_t b = 0; b < n / kQK_K; ++b)
    for (int64_t j = 0; j < kQK_K; ++j) *y++ = x[b].d * float(x[b].qs[j]);
}

}  // namespace pagoda::quant
