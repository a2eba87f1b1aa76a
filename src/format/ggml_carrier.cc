// The carried-type table: ggml type id -> carrier type and the quant module's re-encoding.
#include "format/ggml_carrier.h"

#include "core/check.h"
#include "quant/kquant_carrier.h"

namespace pagoda::format {

std::optional<DType> ggml_carrier_type(GgmlType type) {
  switch (type) {
    case GgmlType::kTQ1_0:
    case GgmlType::kTQ2_0: return DType::kQ2_K;
    case GgmlType::kIQ3_XXS:
    case GgmlType::kIQ3_S:
    case GgmlType::kIQ1_S:
    case GgmlType::kIQ1_M: return DType::kQ6_K;
    case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS:
    case GgmlType::kIQ2_S: return DType::kQ7_K;
    case GgmlType::kQ5_0: return DType::kQ8_0;
    default: return std::nullopt;
  }
}

bool carry_ggml_row(GgmlType type, const void* src, void* dst, int64_t n) {
  namespace q = quant;
  switch (type) {
    case GgmlType::kTQ1_0:
      return q::carry_row_as_q2_K(static_cast<const q::BlockTQ1_0*>(src), static_cast<q::BlockQ2_K*>(dst), n);
    case GgmlType::kTQ2_0:
      return q::carry_row_as_q2_K(static_cast<const q::BlockTQ2_0*>(src), static_cast<q::BlockQ2_K*>(dst), n);
    case GgmlType::kIQ3_XXS:
      return q::carry_row_as_q6_K(static_cast<const q::BlockIQ3_XXS*>(src), static_cast<q::BlockQ6_K*>(dst), n);
    case GgmlType::kIQ3_S:
      return q::carry_row_as_q6_K(static_cast<const q::BlockIQ3_S*>(src), static_cast<q::BlockQ6_K*>(dst), n);
    case GgmlType::kIQ1_S:
      return q::carry_row_as_q6_K(static_cast<const q::BlockIQ1_S*>(src), static_cast<q::BlockQ6_K*>(dst), n);
    case GgmlType::kIQ1_M:
      return q::carry_row_as_q6_K(static_cast<const q::BlockIQ1_M*>(src), static_cast<q::BlockQ6_K*>(dst), n);
    case GgmlType::kIQ2_XXS:
      return q::carry_row_as_q7_K(static_cast<const q::BlockIQ2_XXS*>(src), static_cast<q::BlockQ7_K*>(dst), n);
    case GgmlType::kIQ2_XS:
      return q::carry_row_as_q7_K(static_cast<const q::BlockIQ2_XS*>(src), static_cast<q::BlockQ7_K*>(dst), n);
    case GgmlType::kIQ2_S:
      return q::carry_row_as_q7_K(static_cast<const q::BlockIQ2_S*>(src), static_cast<q::BlockQ7_K*>(dst), n);
    case GgmlType::kQ5_0:
      return q::carry_row_as_q8_0(static_cast<const q::BlockQ5_0*>(src), static_cast<q::BlockQ8_0*>(dst), n);
    default: break;
  }
  PAGODA_CHECK(false, "ggml type {} has no carrier", ggml_type_name(type));
  return false;
}

}  // namespace pagoda::format
