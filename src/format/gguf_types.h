// GGUF vocabulary shared by the reader and the writer: metadata value types, ggml tensor type ids, and the
// GgufValue tree that holds one metadata value (scalars, strings, and arrays nested to any depth).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::format {

inline constexpr uint64_t kGgufDefaultAlignment = 32;  // when general.alignment is absent
inline constexpr uint32_t kGgufMaxDims = 4;            // GGML_MAX_DIMS

// Metadata value type ids, as in the GGUF spec.
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType type);

// ggml tensor type ids (the numbers llama.cpp writes), and pagoda's own from 1000 on. Which ones pagoda runs as
// stored, converts at load (format/ggml_dequantize.h) or re-encodes for another type's kernels (format/ggml_carrier.h)
// is ggml_type_is_supported's; the rest are named in messages but refused.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  kNVFP4 = 40,
  kQ1_0 = 41,
  kQ2_0 = 42,
  // pagoda's own types, numbered from 1000 so they never meet ggml's (README "Weight types").
  kPagodaInt8 = 1000,         // per row: f32 scale, then one int8 per element
  kPagodaAwqInt4G32 = 1001,   // AWQ INT4, groups of 32: fp16 d, u8 zero, u8 0, 16 bytes of nibbles
  kPagodaAwqInt4G64 = 1002,   // groups of 64 (36-byte blocks)
  kPagodaAwqInt4G128 = 1003,  // groups of 128 (68-byte blocks)
};
std::string_view ggml_type_name(GgmlType type);  // "f32", "q4_0", ... or "unknown"
bool ggml_type_is_known(GgmlType type);          // one of the enumerators above
// pagoda can load tensors of this type: it runs them as stored, or converts them at load (ggml_dequantize.h).
bool ggml_type_is_supported(GgmlType type);
// Elements per block and bytes per block (as in ggml's type traits); 0 for an unknown type. Non-quantized
// types have blocks of one element.
uint64_t ggml_block_size(GgmlType type);
uint64_t ggml_type_size(GgmlType type);
// Bytes each row carries besides its blocks: 4 (the f32 scale) for kPagodaInt8, 0 for every other type.
uint64_t ggml_row_header_bytes(GgmlType type);
// general.file_type (llama.cpp's llama_ftype) of a file whose weight matrices are all `weight_type`: 0 for
// f32, 1 f16, 2 q4_0, 7 q8_0, 32 bf16 (0 for any other type).
uint32_t ggml_file_type(GgmlType weight_type);
// The GGUF name of the AWQ input-scale tensor (f32 [in features], the s^-1 that x is multiplied by) that goes with
// an AWQ INT4 weight: "blk.0.attn_q.weight" -> "blk.0.attn_q.input_scale".
std::string awq_input_scale_name(const std::string& weight_name);
// "[64, 32]": tensor dims for messages.
std::string dims_string(const std::vector<int64_t>& dims);
// Bytes of a row of `num_elements` elements; 0 when the type is not supported, when `num_elements` is not a
// multiple of the block size, or when the byte count would not fit in 64 bits.
uint64_t ggml_row_bytes(GgmlType type, uint64_t num_elements);

// One metadata value. For arrays, `array_type` is the element type and `array` holds the elements
// (each itself a GgufValue, so arrays of arrays nest).
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  uint64_t u64 = 0;  // kUint8/16/32/64, kBool (0/1)
  int64_t i64 = 0;   // kInt8/16/32/64
  double f64 = 0.0;  // kFloat32/64
  std::string str;   // kString
  GgufValueType array_type = GgufValueType::kUint8;
  std::vector<GgufValue> array;  // kArray

  static GgufValue u8(uint8_t v);
  static GgufValue i8(int8_t v);
  static GgufValue u16(uint16_t v);
  static GgufValue i16(int16_t v);
  static GgufValue u32(uint32_t v);
  static GgufValue i32(int32_t v);
  static GgufValue u64v(uint64_t v);
  static GgufValue i64v(int64_t v);
  static GgufValue f32(float v);
  static GgufValue f64v(double v);
  static GgufValue boolean(bool v);
  static GgufValue string(std::string v);
  // An array whose elements all have type `element_type` (kArray for an array of arrays).
  static GgufValue array_of(GgufValueType element_type, std::vector<GgufValue> elements);
  static GgufValue string_array(const std::vector<std::string>& v);
  static GgufValue f32_array(const std::vector<float>& v);
  static GgufValue i32_array(const std::vector<int32_t>& v);

  bool operator==(const GgufValue&) const = default;
};

}  // namespace pagoda::format
