// Scalar paged attention: the shared online-softmax loop over plain loops, each K/V value converted from its cache
// type as it is read (the oracle of every ISA's kernel for every KvDType).
#include <math.h>

#include <cstring>

#include "core/half.h"
#include "kernels/kv_type_switch.h"
#include "kernels/paged_attention_impl.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"

namespace pagoda::kernels::ref {
namespace {

// Value i of a row of type T (an int8 row's unscaled).
template <KvDType T>
float row_value(const uint8_t* row, int32_t i) {
  if constexpr (T == KvDType::kF32) {
    float x;
    std::memcpy(&x, row + 4 * i, 4);
    return x;
  } else if constexpr (T == KvDType::kInt8) {
    return float(int8_t(row[i]));
  } else if constexpr (T == KvDType::kF16 || T == KvDType::kBF16) {
    uint16_t h;
    std::memcpy(&h, row + 2 * i, 2);
    return T == KvDType::kF16 ? fp16_to_float(h) : bf16_to_float(h);
  } else if constexpr (T == KvDType::kQ8_0) {
    const auto* b = reinterpret_cast<const quant::BlockQ8_0*>(row) + i / 32;
    return float(b->qs[i % 32]) * fp16_to_float(b->d);
  } else {
    const auto* b = reinterpret_cast<const quant::BlockQ4_0*>(row) + i / 32;
    const int32_t j = i % 32;
    const int32_t nibble = j < 16 ? b->qs[j] & 0x0f : b->qs[j - 16] >> 4;
    return float(nibble - 8) * fp16_to_float(b->d);
  }
}

struct RefOps {
  static void scores(KvDType type, const float* q, const uint8_t* const* rows, const float* scales, int32_t m,
                     int32_t n, float* p) {
    detail::with_kv_type(type, [&]<KvDType T>() {
      for (int32_t j = 0; j < m; ++j) {
        float s = 0.0f;
        for (int32_t i = 0; i < n; ++i) s += q[i] * row_value<T>(rows[j], i);
        p[j] = s * scales[j];
      }
    });
  }
  static float exp_sum(float* p, int32_t m, float max, float sum) {
    for (int32_t j = 0; j < m; ++j) {
      p[j] = expf(p[j] - max);
      sum += p[j];
    }
    return sum;
  }
  static void weighted_rows(KvDType type, const float* w, const uint8_t* const* rows, int32_t m, float* y,
                            int32_t n) {
    detail::with_kv_type(type, [&]<KvDType T>() {
      for (int32_t j = 0; j < m; ++j)
        for (int32_t i = 0; i < n; ++i) y[i] += w[j] * row_value<T>(rows[j], i);
    });
  }
  static void scale(float* y, float a, int32_t n) {
    for (int32_t i = 0; i < n; ++i) y[i] *= a;
  }
};

}  // namespace

void paged_attention(const AttentionArgs& args) { detail::paged_attention<RefOps>(args); }

}  // namespace pagoda::kernels::ref
