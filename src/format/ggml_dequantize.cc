// The ggml type id -> reference dequantizer table (the quant module owns the block formats and the arithmetic).
#include "format/ggml_dequantize.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "quant/block_iq4_mxfp4.h"
#include "quant/block_iquants.h"
#include "quant/block_kquants.h"
#include "quant/block_legacy_quants.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"
#include "quant/block_ternary.h"

namespace pagoda::format {

bool ggml_type_converted_at_load(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_K: return true;
    default: return false;
  }
}

bool ggml_type_has_dequantizer(GgmlType type) {
  return ggml_type_converted_at_load(type) || type == GgmlType::kQ4_1 || type == GgmlType::kQ5_0 || type == GgmlType::kQ5_1 || type == GgmlType::kF32 || type == GgmlType::kF16 ||
         type == GgmlType::kBF16 || type == GgmlType::kQ8_0 || type == GgmlType::kQ4_0 || type == GgmlType::kQ2_K ||
         type == GgmlType::kQ3_K || type == GgmlType::kQ4_K || type == GgmlType::kQ5_K || type == GgmlType::kQ6_K ||
         type == GgmlType::kIQ4_NL || type == GgmlType::kIQ4_XS || type == GgmlType::kMXFP4 ||
         type == GgmlType::kTQ1_0 || type == GgmlType::kTQ2_0 || type == GgmlType::kIQ3_XXS ||
         type == GgmlType::kIQ3_S || type == GgmlType::kIQ1_S || type == GgmlType::kIQ1_M ||
         type == GgmlType::kIQ2_XXS || type == GgmlType::kIQ2_XS || type == GgmlType::kIQ2_S;
}

void dequantize_ggml_row(GgmlType type, const void* src, float* dst, int64_t n) {
  PAGODA_CHECK(ggml_type_has_dequantizer(type), "no dequantizer for ggml type {}", ggml_type_name(type));
  PAGODA_CHECK(n % int64_t(ggml_block_size(type)) == 0, "{} rows hold whole blocks of {} values, got {}",
               ggml_type_name(type), ggml_block_size(type), n);
  namespace q = quant;
  switch (type) {
    case GgmlType::kF32: std::memcpy(dst, src, size_t(n) * sizeof(float)); return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_float(static_cast<const uint16_t*>(src)[i]);
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(static_cast<const uint16_t*>(src)[i]);
      return;
    case GgmlType::kQ8_0: q::dequantize_row_q8_0(static_cast<const q::BlockQ8_0*>(src), dst, n); return;
    case GgmlType::kQ4_0: q::dequantize_row_q4_0(static_cast<const q::BlockQ4_0*>(src), dst, n); return;
    case GgmlType::kQ4_1: q::dequantize_row_q4_1(static_cast<const q::BlockQ4_1*>(src), dst, n); return;
    case GgmlType::kQ5_0: q::dequantize_row_q5_0(static_cast<const q::BlockQ5_0*>(src), dst, n); return;
    case GgmlType::kQ5_1: q::dequantize_row_q5_1(static_cast<const q::BlockQ5_1*>(src), dst, n); return;
    case GgmlType::kQ2_K: q::dequantize_row_q2_K(static_cast<const q::BlockQ2_K*>(src), dst, n); return;
    case GgmlType::kQ3_K: q::dequantize_row_q3_K(static_cast<const q::BlockQ3_K*>(src), dst, n); return;
    case GgmlType::kQ4_K: q::dequantize_row_q4_K(static_cast<const q::BlockQ4_K*>(src), dst, n); return;
    case GgmlType::kQ5_K: q::dequantize_row_q5_K(static_cast<const q::BlockQ5_K*>(src), dst, n); return;
    case GgmlType::kQ6_K: q::dequantize_row_q6_K(static_cast<const q::BlockQ6_K*>(src), dst, n); return;
    case GgmlType::kQ8_K: q::dequantize_row_q8_K(static_cast<const q::BlockQ8_K*>(src), dst, n); return;
    case GgmlType::kIQ4_NL: q::dequantize_row_iq4_nl(static_cast<const q::BlockIQ4_NL*>(src), dst, n); return;
    case GgmlType::kIQ4_XS: q::dequantize_row_iq4_xs(static_cast<const q::BlockIQ4_XS*>(src), dst, n); return;
    case GgmlType::kMXFP4: q::dequantize_row_mxfp4(static_cast<const q::BlockMXFP4*>(src), dst, n); return;
    case GgmlType::kTQ1_0: q::dequantize_row_tq1_0(static_cast<const q::BlockTQ1_0*>(src), dst, n); return;
    case GgmlType::kTQ2_0: q::dequantize_row_tq2_0(static_cast<const q::BlockTQ2_0*>(src), dst, n); return;
    case GgmlType::kIQ3_XXS: q::dequantize_row_iq3_xxs(static_cast<const q::BlockIQ3_XXS*>(src), dst, n); return;
    case GgmlType::kIQ3_S: q::dequantize_row_iq3_s(static_cast<const q::BlockIQ3_S*>(src), dst, n); return;
    case GgmlType::kIQ1_S: q::dequantize_row_iq1_s(static_cast<const q::BlockIQ1_S*>(src), dst, n); return;
    case GgmlType::kIQ1_M: q::dequantize_row_iq1_m(static_cast<const q::BlockIQ1_M*>(src), dst, n); return;
    case GgmlType::kIQ2_XXS: q::dequantize_row_iq2_xxs(static_cast<const q::BlockIQ2_XXS*>(src), dst, n); return;
    case GgmlType::kIQ2_XS: q::dequantize_row_iq2_xs(static_cast<const q::BlockIQ2_XS*>(src), dst, n); return;
    case GgmlType::kIQ2_S: q::dequantize_row_iq2_s(static_cast<const q::BlockIQ2_S*>(src), dst, n); return;
    default: break;
  }
  PAGODA_CHECK(false, "no dequantizer for ggml type {}", ggml_type_name(type));
}

}  // namespace pagoda::format
