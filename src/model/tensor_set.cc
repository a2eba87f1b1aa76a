// tensor_set_from_gguf: a GGUF's tensors by name, with the types no kernel runs as stored converted to q8_0 or f32
// (the policy is in tensor_set.h).
#include "model/tensor_set.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>

#include "core/half.h"
#include "format/ggml_carrier.h"
#include "format/ggml_dequantize.h"
#include "quant/block_q8_0.h"

namespace pagoda {
namespace {

std::optional<DType> dtype_of(format::GgmlType type) {
  switch (type) {
    case format::GgmlType::kF32: return DType::kF32;
    case format::GgmlType::kF16: return DType::kF16;
    case format::GgmlType::kBF16: return DType::kBF16;
    case format::GgmlType::kQ8_0: return DType::kQ8_0;
    case format::GgmlType::kQ4_0: return DType::kQ4_0;
    case format::GgmlType::kQ4_1: return DType::kQ4_1;
    case format::GgmlType::kQ5_1: return DType::kQ5_1;
    case format::GgmlType::kQ2_K: return DType::kQ2_K;
    case format::GgmlType::kQ3_K: return DType::kQ3_K;
    case format::GgmlType::kQ4_K: return DType::kQ4_K;
    case format::GgmlType::kQ5_K: return DType::kQ5_K;
    case format::GgmlType::kQ6_K: return DType::kQ6_K;
    case format::GgmlType::kIQ4_NL: return DType::kIQ4_NL;
    case format::GgmlType::kIQ4_XS: return DType::kIQ4_XS;
    case format::GgmlType::kMXFP4: return DType::kMXFP4;
    case format::GgmlType::kPagodaInt8: return DType::kInt8;
    case format::GgmlType::kPagodaAwqInt4G32: return DType::kAwqInt4G32;
    case format::GgmlType::kPagodaAwqInt4G64: return DType::kAwqInt4G64;
    case format::GgmlType::kPagodaAwqInt4G128: return DType::kAwqInt4G128;
    default: return std::nullopt;
  }
}

bool is_finite_fp16(uint16_t h) { return (h & 0x7c00) != 0x7c00; }

// One tensor of a converted type -> owned data in q8_0 (two or more dims) or f32 (one dim, or values beyond q8_0's
// range), set on `r`.
std::shared_ptr<const void> convert(const format::GgufTensorInfo& t, TensorRef& r, QuantizeRowQ8_0Fn quantize) {
  const int64_t row_len = t.dims[0];
  int64_t num_rows = 1;
  for (size_t d = 1; d < t.dims.size(); ++d) num_rows *= t.dims[d];
  const uint64_t src_row_bytes = format::ggml_row_bytes(t.type, uint64_t(row_len));
  const auto* src = static_cast<const uint8_t*>(t.data);
  std::vector<float> row(size_t(row_len), 0.0f);
  if (t.dims.size() >= 2 && row_len % quant::BlockQ8_0::kNumValues == 0) {
    const int64_t blocks_per_row = row_len / quant::BlockQ8_0::kNumValues;
    std::shared_ptr<quant::BlockQ8_0[]> out(new quant::BlockQ8_0[size_t(blocks_per_row * num_rows)]);
    bool fits = true;
    for (int64_t i = 0; i < num_rows && fits; ++i) {
      format::dequantize_ggml_row(t.type, src + uint64_t(i) * src_row_bytes, row.data(), row_len);
      quant::BlockQ8_0* dst = out.get() + i * blocks_per_row;
      quantize(row.data(), dst, row_len);
      for (int64_t b = 0; b < blocks_per_row; ++b) fits = fits && is_finite_fp16(dst[b].d);
    }
    if (fits) {
      r.dtype = DType::kQ8_0;
      r.data = out.get();
      return out;
    }
  }
  std::shared_ptr<float[]> out(new float[size_t(row_len * num_rows)]);
  for (int64_t i = 0; i < num_rows; ++i)
    format::dequantize_ggml_row(t.type, src + uint64_t(i) * src_row_bytes, out.get() + i * row_len, row_len);
  r.dtype = DType::kF32;
  r.data = out.get();
  return out;
}

// One matrix of a carried type -> owned data in its carrier type, set on `r`; a vector, or a matrix with a block the
// carrier cannot hold exactly (a non-finite scale), is converted as the converted types are.
std::shared_ptr<const void> carry(const format::GgufTensorInfo& t, DType carrier, TensorRef& r,
                                  QuantizeRowQ8_0Fn quantize) {
  if (t.dims.size() < 2) return convert(t, r, quantize);  // a vector runs as f32, as a converted one does
  const int64_t row_len = t.dims[0];
  int64_t num_rows = 1;
  for (size_t d = 1; d < t.dims.size(); ++d) num_rows *= t.dims[d];
  const uint64_t src_row_bytes = format::ggml_row_bytes(t.type, uint64_t(row_len));
  const uint64_t dst_row_bytes = uint64_t(dtype_row_bytes(carrier, row_len));
  const auto* src = static_cast<const uint8_t*>(t.data);
  std::shared_ptr<uint8_t[]> out(new uint8_t[size_t(dst_row_bytes * uint64_t(num_rows))]);
  for (int64_t i = 0; i < num_rows; ++i) {
    if (!format::carry_ggml_row(t.type, src + uint64_t(i) * src_row_bytes, out.get() + uint64_t(i) * dst_row_bytes,
                                row_len))
      return convert(t, r, quantize);
  }
  r.dtype = carrier;
  r.data = out.get();
  return out;
}

}  // namespace

TensorSet tensor_set_from_gguf(const format::GgufFile& file, QuantizeRowQ8_0Fn quantize_row_q8_0) {
  TensorSet set;
  set.source = file.name();
  set.file_mapped = file.is_file_mapping();
  for (const format::GgufTensorInfo& t : file.tensors()) {
    TensorRef r;
    r.dtype = dtype_of(t.type);
    r.type_name = std::string(format::ggml_type_name(t.type));
    r.dims = t.dims;
    r.data = t.data;
    if (format::ggml_type_converted_at_load(t.type) && t.data != nullptr) {
      set.owned.push_back(convert(t, r, quantize_row_q8_0));
    } else if (const auto carrier = format::ggml_carrier_type(t.type); carrier && t.data != nullptr) {
      set.owned.push_back(carry(t, *carrier, r, quantize_row_q8_0));
    }
    set.tensors.emplace(t.name, std::move(r));
  }
  return set;
}

std::string tensor_conversion_note(const format::GgufFile& file) {
  std::map<std::string, int> converted, carried;
  int total_converted = 0, total_carried = 0;
  for (const format::GgufTensorInfo& t : file.tensors()) {
    if (format::ggml_type_converted_at_load(t.type)) {
      ++converted[std::string(format::ggml_type_name(t.type))];
      ++total_converted;
    } else if (const auto carrier = format::ggml_carrier_type(t.type)) {
      ++carried[fmt::format("{} as {}", format::ggml_type_name(t.type), dtype_name(*carrier))];
      ++total_carried;
    }
  }
  const auto list = [](const std::map<std::string, int>& counts) {
    std::string types;
    for (const auto& [type, count] : counts) types += fmt::format("{}{} {}", types.empty() ? "" : ", ", count, type);
    return types;
  };
  std::string note;
  if (total_converted > 0)
    note = fmt::format(
        "converted at load: {} {} ({}) of types no kernel runs as stored yet, dequantized exactly, then "
        "matrices requantized to q8_0 and vectors kept as f32",
        total_converted, total_converted == 1 ? "tensor" : "tensors", list(converted));
  if (total_carried > 0)
    note +=
        fmt::format("{}re-encoded losslessly at load for another type's kernels: {} {} ({})", note.empty() ? "" : "; ",
                    total_carried, total_carried == 1 ? "tensor" : "tensors", list(carried));
  return note;
}

}  // namespace pagoda
