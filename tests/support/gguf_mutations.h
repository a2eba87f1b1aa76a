// Type-swapped GGUF metadata, for fuzz tests of whatever reads metadata keys (the hyper-parameters, the
// tokenizer): one value of every GGUF type, with the extremes readers mishandle (zero, maxima, NaN, floats no
// float holds, empty and nested arrays, invalid UTF-8), and a helper that rewrites a file with one key replaced.
// Header-only test support; no product code.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"

namespace pagoda::testing_support {

inline std::vector<format::GgufValue> type_swapped_gguf_values() {
  using format::GgufValue;
  using format::GgufValueType;
  return {GgufValue::u8(255),
          GgufValue::i8(-128),
          GgufValue::u16(65535),
          GgufValue::i16(-1),
          GgufValue::u32(0),
          GgufValue::u32(1),
          GgufValue::u32(std::numeric_limits<uint32_t>::max()),
          GgufValue::u32(uint32_t(1) << 31),
          GgufValue::i32(std::numeric_limits<int32_t>::min()),
          GgufValue::i32(-1),
          GgufValue::u64v(std::numeric_limits<uint64_t>::max()),
          GgufValue::i64v(std::numeric_limits<int64_t>::min()),
          GgufValue::f32(std::nanf("")),
          GgufValue::f32(-1.0f),
          GgufValue::f32(0.0f),
          GgufValue::f64v(1e300),
          GgufValue::boolean(true),
          GgufValue::string(""),
          GgufValue::string("x\xff\xfe"),
          GgufValue::array_of(GgufValueType::kUint32, {}),
          GgufValue::string_array({"a", "", "<0x41>"}),
          GgufValue::i32_array({-1, std::numeric_limits<int32_t>::max(), 7}),
          GgufValue::f32_array({std::nanf(""), INFINITY}),
          GgufValue::array_of(GgufValueType::kFloat64, {GgufValue::f64v(1e300)}),
          GgufValue::array_of(GgufValueType::kUint64, {GgufValue::u64v(std::numeric_limits<uint64_t>::max())}),
          GgufValue::array_of(GgufValueType::kArray, {GgufValue::i32_array({1}), GgufValue::string_array({"x"})})};
}

// The bytes of `file` rewritten with `key` set to `value` (added when absent); its tensors copied, or left out
// when the reader under test needs only metadata (a tokenizer), which keeps each variant small.
inline std::vector<uint8_t> with_metadata(const format::GgufFile& file, const std::string& key,
                                          const format::GgufValue& value, bool keep_tensors = true) {
  format::GgufWriter w;
  for (const auto& [k, v] : file.metadata()) w.set(k, k == key ? value : v);
  w.set(key, value);
  if (keep_tensors)
    for (const format::GgufTensorInfo& t : file.tensors()) w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
  return w.to_bytes();
}

}  // namespace pagoda::testing_support
