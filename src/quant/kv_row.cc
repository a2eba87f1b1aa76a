// Scalar KV row conversions (see kv_row.h).
#include "quant/kv_row.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"

namespace pagoda {

void quantize_kv_row(KvDType type, const float* x, int32_t n, uint8_t* row) {
  PAGODA_CHECK(n % kv_dtype_block_values(type) == 0, "a {} KV row of {} values", kv_dtype_name(type), n);
  switch (type) {
    case KvDType::kF32: std::memcpy(row, x, sizeof(float) * size_t(n)); return;
    case KvDType::kF16:
      for (int32_t i = 0; i < n; ++i) {
        const uint16_t h = float_to_fp16(x[i]);
        std::memcpy(row + 2 * i, &h, 2);
      }
      return;
    case KvDType::kBF16:
      for (int32_t i = 0; i < n; ++i) {
        const uint16_t h = float_to_bf16(x[i]);
        std::memcpy(row + 2 * i, &h, 2);
      }
      return;
    case KvDType::kQ8_0: quant::quantize_row_q8_0(x, reinterpret_cast<quant::BlockQ8_0*>(row), n); return;
    case KvDType::kQ4_0: quant::quantize_row_q4_0(x, reinterpret_cast<quant::BlockQ4_0*>(row), n); return;
    case KvDType::kInt8: break;
  }
  PAGODA_CHECK(false, "quantize_kv_row of an int8 row (kv_int8.h writes those)");
}

void dequantize_kv_row(KvDType type, const uint8_t* row, int32_t n, float* x) {
  PAGODA_CHECK(n % kv_dtype_block_values(type) == 0, "a {} KV row of {} values", kv_dtype_name(type), n);
  switch (type) {
    case KvDType::kF32: std::memcpy(x, row, sizeof(float) * size_t(n)); return;
    case KvDType::kF16:
    case KvDType::kBF16:
      for (int32_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        x[i] = type == KvDType::kF16 ? fp16_to_float(h) : bf16_to_float(h);
      }
      return;
    case KvDType::kQ8_0: quant::dequantize_row_q8_0(reinterpret_cast<const quant::BlockQ8_0*>(row), x, n); return;
    case KvDType::kQ4_0: quant::dequantize_row_q4_0(reinterpret_cast<const quant::BlockQ4_0*>(row), x, n); return;
    case KvDType::kInt8: break;
  }
  PAGODA_CHECK(false, "dequantize_kv_row of an int8 row (kv_int8.h reads those)");
}

}  // namespace pagoda
