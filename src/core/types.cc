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
    case DType::kIQ4_NL: return "iq4_nl";
    case DType::kIQ4_XS: return "iq4_xs";
    case DType::kMXFP4: return "mxfp4";
    case DType::kIQ4_NLx8: return "iq4_nlx8";
    case DType::kIQ4_XSx8: return "iq4_xsx8";
    case DType::kMXFP4x8: return "mxfp4x8";
    case DType::kQ2_K: return "q2_K";
    case DType::kQ3_K: return "q3_K";
    case DType::kQ2_Kx8: return "q2_Kx8";
    case DType::kQ3_Kx8: return "q3_Kx8";
    case DType::kQ7_K: return "q7_K";
    case DType::kQ7_Kx8: return "q7_Kx8";
    case DType::kQ4_1: return "q4_1";
    case DType::kQ5_1: return "q5_1";
    case DType::kQ4_1x8: return "q4_1x8";
    case DType::kQ5_1x8: return "q5_1x8";
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
    case DType::kIQ4_NL:
    case DType::kIQ4_NLx8: return num_elements / 32 * 18;
    case DType::kIQ4_XS: return num_elements / 256 * 136;
    case DType::kIQ4_XSx8: return num_elements / 256 * 138;
    case DType::kMXFP4:
    case DType::kMXFP4x8: return num_elements / 32 * 17;
    case DType::kQ2_K:
    case DType::kQ2_Kx8: return num_elements / 256 * 84;
    case DType::kQ3_K: return num_elements / 256 * 110;
    case DType::kQ3_Kx8: return num_elements / 256 * 114;
    case DType::kQ7_K:
    case DType::kQ7_Kx8: return num_elements / 256 * 274;
    case DType::kQ4_1:
    case DType::kQ4_1x8: return num_elements / 32 * 20;
    case DType::kQ5_1:
    case DType::kQ5_1x8: return num_elements / 32 * 24;
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
    case DType::kAwqInt4x16:
    case DType::kIQ4_NL:
    case DType::kIQ4_NLx8:
    case DType::kMXFP4:
    case DType::kMXFP4x8:
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_1x8:
    case DType::kQ5_1x8: return 32;
    case DType::kAwqInt4G64: return 64;
    case DType::kAwqInt4G128: return 128;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ4_Kx8:
    case DType::kQ5_Kx8:
    case DType::kQ6_Kx8:
    case DType::kIQ4_XS:
    case DType::kIQ4_XSx8:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ2_Kx8:
    case DType::kQ3_Kx8:
    case DType::kQ7_K:
    case DType::kQ7_Kx8: return 256;
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
    case DType::kQ6_Kx8:
    case DType::kIQ4_NLx8:
    case DType::kIQ4_XSx8:
    case DType::kMXFP4x8:
    case DType::kQ2_Kx8:
    case DType::kQ3_Kx8:
    case DType::kQ7_Kx8:
    case DType::kQ4_1x8:
    case DType::kQ5_1x8: return 8;
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

std::optional<KvDType> parse_kv_dtype(std::string_view name) {
  if (name == "f32") return KvDType::kF32;
  if (name == "f16") return KvDType::kF16;
  if (name == "bf16") return KvDType::kBF16;
  if (name == "q8_0") return KvDType::kQ8_0;
  if (name == "q4_0") return KvDType::kQ4_0;
  if (name == "int8") return KvDType::kInt8;
  return std::nullopt;
}

const char* kv_dtype_name(KvDType dtype) {
  switch (dtype) {
    case KvDType::kF32: return "f32";
    case KvDType::kInt8: return "int8";
    case KvDType::kF16: return "f16";
    case KvDType::kBF16: return "bf16";
    case KvDType::kQ8_0: return "q8_0";
    case KvDType::kQ4_0: return "q4_0";
  }
  return "?";
}

const char* kv_dtype_names() { return "f32, f16, bf16, q8_0, q4_0, int8"; }

int32_t kv_dtype_block_values(KvDType dtype) { return dtype == KvDType::kQ8_0 || dtype == KvDType::kQ4_0 ? 32 : 1; }

int64_t kv_row_bytes(KvDType dtype, int64_t num_values) {
  switch (dtype) {
    case KvDType::kF32: return num_values * 4;
    case KvDType::kInt8: return num_values;
    case KvDType::kF16:
    case KvDType::kBF16: return num_values * 2;
    case KvDType::kQ8_0: return num_values / 32 * 34;
    case KvDType::kQ4_0: return num_values / 32 * 18;
  }
  return 0;
}

std::string kv_types_name(KvCacheTypes types) {
  if (types.k == types.v) return kv_dtype_name(types.k);
  return std::string("K ") + kv_dtype_name(types.k) + ", V " + kv_dtype_name(types.v);
}

}  // namespace pagoda
