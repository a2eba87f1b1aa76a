// Names and row sizes of DType values.
#include "core/types.h"

namespace pagoda {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
  }
  return "?";
}

int64_t dtype_row_bytes(DType dtype, int64_t num_elements) {
  switch (dtype) {
    case DType::kF32: return num_elements * 4;
    case DType::kF16:
    case DType::kBF16: return num_elements * 2;
    case DType::kQ8_0: return num_elements / 32 * 34;
    case DType::kQ4_0: return num_elements / 32 * 18;
  }
  return 0;
}

}  // namespace pagoda
