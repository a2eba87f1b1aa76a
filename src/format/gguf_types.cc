// The GGUF/ggml vocabulary tables: value type names, ggml type names and block layouts, GgufValue factories.
#include "format/gguf_types.h"

#include "format/ggml_carrier.h"
#include "format/ggml_dequantize.h"

namespace pagoda::format {

namespace {

struct GgmlTypeTraits {
  std::string_view name;
  uint64_t block_size;            // elements per block
  uint64_t type_size;             // bytes per block
  uint64_t row_header_bytes = 0;  // bytes per row before its blocks
};

// Block layouts match ggml's type_traits, so byte sizes of tensors we cannot load yet are still right (the
// writer needs them for quantized test files, and error messages can name the type).
GgmlTypeTraits traits_of(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return {"f32", 1, 4};
    case GgmlType::kF16: return {"f16", 1, 2};
    case GgmlType::kQ4_0: return {"q4_0", 32, 18};
    case GgmlType::kQ4_1: return {"q4_1", 32, 20};
    case GgmlType::kQ5_0: return {"q5_0", 32, 22};
    case GgmlType::kQ5_1: return {"q5_1", 32, 24};
    case GgmlType::kQ8_0: return {"q8_0", 32, 34};
    case GgmlType::kQ8_1: return {"q8_1", 32, 36};
    case GgmlType::kQ2_K: return {"q2_K", 256, 84};
    case GgmlType::kQ3_K: return {"q3_K", 256, 110};
    case GgmlType::kQ4_K: return {"q4_K", 256, 144};
    case GgmlType::kQ5_K: return {"q5_K", 256, 176};
    case GgmlType::kQ6_K: return {"q6_K", 256, 210};
    case GgmlType::kQ8_K: return {"q8_K", 256, 292};
    case GgmlType::kIQ2_XXS: return {"iq2_xxs", 256, 66};
    case GgmlType::kIQ2_XS: return {"iq2_xs", 256, 74};
    case GgmlType::kIQ3_XXS: return {"iq3_xxs", 256, 98};
    case GgmlType::kIQ1_S: return {"iq1_s", 256, 50};
    case GgmlType::kIQ4_NL: return {"iq4_nl", 32, 18};
    case GgmlType::kIQ3_S: return {"iq3_s", 256, 110};
    case GgmlType::kIQ2_S: return {"iq2_s", 256, 82};
    case GgmlType::kIQ4_XS: return {"iq4_xs", 256, 136};
    case GgmlType::kIQ1_M: return {"iq1_m", 256, 56};
    case GgmlType::kTQ1_0: return {"tq1_0", 256, 54};
    case GgmlType::kTQ2_0: return {"tq2_0", 256, 66};
    case GgmlType::kMXFP4: return {"mxfp4", 32, 17};
    case GgmlType::kNVFP4: return {"nvfp4", 64, 36};
    case GgmlType::kQ1_0: return {"q1_0", 128, 18};
    case GgmlType::kQ2_0: return {"q2_0", 64, 18};
    case GgmlType::kI8: return {"i8", 1, 1};
    case GgmlType::kI16: return {"i16", 1, 2};
    case GgmlType::kI32: return {"i32", 1, 4};
    case GgmlType::kI64: return {"i64", 1, 8};
    case GgmlType::kF64: return {"f64", 1, 8};
    case GgmlType::kBF16: return {"bf16", 1, 2};
    case GgmlType::kPagodaInt8: return {"int8", 1, 1, 4};
    case GgmlType::kPagodaAwqInt4G32: return {"awq_int4_g32", 32, 20};
    case GgmlType::kPagodaAwqInt4G64: return {"awq_int4_g64", 64, 36};
    case GgmlType::kPagodaAwqInt4G128: return {"awq_int4_g128", 128, 68};
  }
  return {"unknown", 0, 0};
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: return "u8";
    case GgufValueType::kInt8: return "i8";
    case GgufValueType::kUint16: return "u16";
    case GgufValueType::kInt16: return "i16";
    case GgufValueType::kUint32: return "u32";
    case GgufValueType::kInt32: return "i32";
    case GgufValueType::kFloat32: return "f32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kUint64: return "u64";
    case GgufValueType::kInt64: return "i64";
    case GgufValueType::kFloat64: return "f64";
  }
  return "unknown";
}

std::string_view ggml_type_name(GgmlType type) { return traits_of(type).name; }

bool ggml_type_is_known(GgmlType type) { return traits_of(type).block_size != 0; }

uint32_t ggml_file_type(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kBF16: return 32;
    default: return 0;
  }
}

std::string awq_input_scale_name(const std::string& weight_name) {
  constexpr std::string_view kSuffix = ".weight";
  if (weight_name.ends_with(kSuffix))
    return weight_name.substr(0, weight_name.size() - kSuffix.size()) + ".input_scale";
  return weight_name + ".input_scale";
}

std::string dims_string(const std::vector<int64_t>& dims) {
  // By hand rather than fmt::join, which trips a GCC 12 -Wstringop-overflow false positive.
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
  return out + "]";
}

bool ggml_type_is_supported(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
    case GgmlType::kIQ4_NL:
    case GgmlType::kIQ4_XS:
    case GgmlType::kMXFP4:
    case GgmlType::kPagodaInt8:
    case GgmlType::kPagodaAwqInt4G32:
    case GgmlType::kPagodaAwqInt4G64:
    case GgmlType::kPagodaAwqInt4G128: return true;
    // The types converted or re-encoded at load (model/tensor_set.h) are listed once, beside their dequantizers
    // and carriers.
    default: return ggml_type_converted_at_load(type) || ggml_carrier_type(type).has_value();
  }
}

uint64_t ggml_block_size(GgmlType type) { return traits_of(type).block_size; }

uint64_t ggml_type_size(GgmlType type) { return traits_of(type).type_size; }

uint64_t ggml_row_header_bytes(GgmlType type) { return traits_of(type).row_header_bytes; }

uint64_t ggml_row_bytes(GgmlType type, uint64_t num_elements) {
  if (!ggml_type_is_supported(type)) return 0;
  const GgmlTypeTraits traits = traits_of(type);
  if (num_elements % traits.block_size != 0) return 0;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(num_elements / traits.block_size, traits.type_size, &bytes)) return 0;
  if (__builtin_add_overflow(bytes, traits.row_header_bytes, &bytes)) return 0;
  return bytes;
}

GgufValue GgufValue::u8(uint8_t v) {
  GgufValue value;
  value.type = GgufValueType::kUint8;
  value.u64 = v;
  return value;
}

GgufValue GgufValue::i8(int8_t v) {
  GgufValue value;
  value.type = GgufValueType::kInt8;
  value.i64 = v;
  return value;
}

GgufValue GgufValue::u16(uint16_t v) {
  GgufValue value;
  value.type = GgufValueType::kUint16;
  value.u64 = v;
  return value;
}

GgufValue GgufValue::i16(int16_t v) {
  GgufValue value;
  value.type = GgufValueType::kInt16;
  value.i64 = v;
  return value;
}

GgufValue GgufValue::u32(uint32_t v) {
  GgufValue value;
  value.type = GgufValueType::kUint32;
  value.u64 = v;
  return value;
}

GgufValue GgufValue::i32(int32_t v) {
  GgufValue value;
  value.type = GgufValueType::kInt32;
  value.i64 = v;
  return value;
}

GgufValue GgufValue::u64v(uint64_t v) {
  GgufValue value;
  value.type = GgufValueType::kUint64;
  value.u64 = v;
  return value;
}

GgufValue GgufValue::i64v(int64_t v) {
  GgufValue value;
  value.type = GgufValueType::kInt64;
  value.i64 = v;
  return value;
}

GgufValue GgufValue::f64v(double v) {
  GgufValue value;
  value.type = GgufValueType::kFloat64;
  value.f64 = v;
  return value;
}

GgufValue GgufValue::f32(float v) {
  GgufValue value;
  value.type = GgufValueType::kFloat32;
  value.f64 = v;
  return value;
}

GgufValue GgufValue::boolean(bool v) {
  GgufValue value;
  value.type = GgufValueType::kBool;
  value.u64 = v ? 1 : 0;
  return value;
}

GgufValue GgufValue::string(std::string v) {
  GgufValue value;
  value.type = GgufValueType::kString;
  value.str = std::move(v);
  return value;
}

GgufValue GgufValue::array_of(GgufValueType element_type, std::vector<GgufValue> elements) {
  GgufValue value;
  value.type = GgufValueType::kArray;
  value.array_type = element_type;
  value.array = std::move(elements);
  return value;
}

GgufValue GgufValue::string_array(const std::vector<std::string>& v) {
  GgufValue value;
  value.type = GgufValueType::kArray;
  value.array_type = GgufValueType::kString;
  value.array.reserve(v.size());
  for (const std::string& s : v) value.array.push_back(string(s));
  return value;
}

GgufValue GgufValue::f32_array(const std::vector<float>& v) {
  GgufValue value;
  value.type = GgufValueType::kArray;
  value.array_type = GgufValueType::kFloat32;
  value.array.reserve(v.size());
  for (float f : v) value.array.push_back(f32(f));
  return value;
}

GgufValue GgufValue::i32_array(const std::vector<int32_t>& v) {
  GgufValue value;
  value.type = GgufValueType::kArray;
  value.array_type = GgufValueType::kInt32;
  value.array.reserve(v.size());
  for (int32_t i : v) value.array.push_back(i32(i));
  return value;
}

}  // namespace pagoda::format
