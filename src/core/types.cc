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
    case DType::kQ4_0x8: return "q4_0x8";
    case DType::kQ8_0x8: return "q8_0x8";
    case DType::kInt8x8: return "int8x8";
    case DType::kAwqInt4x8: return "awq_int4x8";
    case DType::kQ4_0x16: return "q4_0x16";
    case DType::kQ8_0x16: return "q8_0x16";
    case DType::kAwqInt4x16: return "awq_int4x16";
    case DType::kInt8x16: return "int8x16";
    case DType::kInt8: return "int8";
    case DType::kAwqInt4G32: return "awq_int4_g32";
    case DType::kAwqInt4G64: return "awq_int4_g64";
    case DType::kAwqInt4G128: return "awq_int4_g128";
    case DType::kQ4_K: return "q4_K";
    case DType::kQ5_K: return "q5_K";
    case DType::kQ6_K: return "q6_K";
    case DType::kQ4_Kx8: return "q4_Kx8";
    case DType::kQ5_Kx8: return "q5_Kx8";
    case DType::kQ6_Kx8: return "q6_Kx8";
  }
  return "?";
}

int64_t dtype_row_bytes(DType dtype, int64_t num_elements) {
  switch (dtype) {
    case DType::kF32: return num_elements * 4;
    case DType::kF16:
    case DType::kBF16: return num_elements * 2;
    case DType::kQ8_0:
    case DType::kQ8_0x8:
    case DType::kQ8_0x16: return num_elements / 32 * 34;
    case DType::kQ4_0:
    case DType::kQ4_0x8:
    case DType::kQ4_0x16: return num_elements / 32 * 18;
    case DType::kInt8:
    case DType::kInt8x8:
    case DType::kInt8x16: return 4 + num_elements;
    case DType::kAwqInt4G32: return num_elements / 32 * 20;
    case DType::kAwqInt4G64: return num_elements / 64 * 36;
    case DType::kAwqInt4G128: return num_elements / 128 * 68;
    case DType::kAwqInt4x8:
    case DType::kAwqInt4x16: return num_elements / 32 * 19;
    case DType::kQ4_K: return num_elements / 256 * 144;
    case DType::kQ5_K: return num_elements / 256 * 176;
    case DType::kQ6_K:
    case DType::kQ6_Kx8: return num_elements / 256 * 210;
    case DType::kQ4_Kx8: return num_elements / 256 * 148;
    case DType::kQ5_Kx8: return num_elements / 256 * 180;
  }
  return 0;
}

int64_t dtype_block_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kInt8:
    case DType::kInt8x8:
    case DType::kInt8x16: return 1;
    case DType::kQ8_0:
    case DType::kQ8_0x8:
    case DType::kQ4_0:
    case DType::kQ4_0x8:
    case DType::kAwqInt4G32:
    case DType::kAwqInt4x8:
    case DType::kQ4_0x16:
    case DType::kQ8_0x16:
    case DType::kAwqInt4x16: return 32;
    case DType::kAwqInt4G64: return 64;
    case DType::kAwqInt4G128: return 128;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ4_Kx8:
    case DType::kQ5_Kx8:
    case DType::kQ6_Kx8: return 256;
  }
  return 1;
}

bool dtype_is_row_interleaved(DType dtype) { return dtype_interleave_rows(dtype) > 1; }

int64_t dtype_interleave_rows(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0x8:
    case DType::kQ8_0x8:
    case DType::kInt8x8:
    case DType::kAwqInt4x8:
    case DType::kQ4_Kx8:
    case DType::kQ5_Kx8:
    case DType::kQ6_Kx8: return 8;
    case DType::kQ4_0x16:
    case DType::kQ8_0x16:
    case DType::kAwqInt4x16:
    case DType::kInt8x16: return 16;
    default: return 1;
  }
}

bool dtype_is_awq_int4(DType dtype) {
  return dtype == DType::kAwqInt4G32 || dtype == DType::kAwqInt4G64 || dtype == DType::kAwqInt4G128 ||
         dtype == DType::kAwqInt4x8 || dtype == DType::kAwqInt4x16;
}

}  // namespace pagoda
