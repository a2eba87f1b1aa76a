// GGUF -> quantized GGUF, one tensor at a time (GgufWriter::add_tensor_generated), so memory stays at one
// tensor's f32 copy whatever the model size (plus the AWQ scale vectors, one float per input channel).
#include "format/gguf_quantizer.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "core/check.h"
#include "core/half.h"
#include "format/gguf_names.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "quant/block_awq_int4.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"
#include "quant/row_int8.h"

namespace pagoda::format {
namespace {

bool is_float(GgmlType t) { return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16; }

bool is_awq(GgmlType t) {
  return t == GgmlType::kPagodaAwqInt4G32 || t == GgmlType::kPagodaAwqInt4G64 || t == GgmlType::kPagodaAwqInt4G128;
}

bool is_quantized_type(GgmlType t) {
  return t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0 || t == GgmlType::kPagodaInt8 || is_awq(t);
}

int64_t awq_group(GgmlType t) { return int64_t(ggml_block_size(t)); }

std::vector<float> to_f32(const GgufTensorInfo& t) {
  const int64_t n = t.num_elements();
  std::vector<float> out(static_cast<size_t>(n));
  switch (t.type) {
    case GgmlType::kF32: std::memcpy(out.data(), t.data, size_t(n) * sizeof(float)); break;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) out[size_t(i)] = fp16_to_float(static_cast<const uint16_t*>(t.data)[i]);
      break;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) out[size_t(i)] = bf16_to_float(static_cast<const uint16_t*>(t.data)[i]);
      break;
    default: break;  // excluded by the caller
  }
  return out;
}

// values: f32 [num_rows, row_len] -> dst in type `to`. An AWQ weight with a scale s (and the calibration rows it
// was found on) is quantized as W diag(s) with each group clipped as quant::clip_awq_groups chooses.
void quantize_rows(std::vector<float>& values, int64_t row_len, GgmlType to, const std::vector<float>* awq_scales,
                   const quant::LinearInputStats* stats, std::span<uint8_t> dst) {
  const int64_t n = int64_t(values.size());
  const int64_t num_rows = n / row_len;
  switch (to) {
    case GgmlType::kQ8_0:
      quant::quantize_row_q8_0(values.data(), reinterpret_cast<quant::BlockQ8_0*>(dst.data()), n);
      return;
    case GgmlType::kQ4_0:
      quant::quantize_row_q4_0(values.data(), reinterpret_cast<quant::BlockQ4_0*>(dst.data()), n);
      return;
    case GgmlType::kPagodaInt8:
      for (int64_t r = 0; r < num_rows; ++r)
        quant::quantize_row_int8(values.data() + r * row_len, dst.data() + r * quant::int8_row_bytes(row_len), row_len);
      return;
    default: break;
  }
  PAGODA_CHECK(is_awq(to));
  if (awq_scales != nullptr)
    values = quant::clip_awq_groups(values.data(), num_rows, row_len, awq_group(to), *awq_scales, *stats);
  quant::quantize_row_awq_int4(values.data(), dst.data(), n, awq_group(to));
}

}  // namespace

GgmlType quantized_type_for(const std::vector<int64_t>& dims, GgmlType from, GgmlType requested) {
  // Matrices, and the stacked expert matrices of an MoE model (3-D; plain row quantization, no AWQ for them). A
  // [n, 1] tensor is a vector (Qwen2-MoE's shared-expert gate): kept, as llama.cpp keeps every tensor of one row.
  if (!is_float(from) || (dims.size() != 2 && !(dims.size() == 3 && !is_awq(requested)))) return from;
  if (dims.size() == 2 && dims[1] == 1) return from;
  const int64_t row_len = dims[0];
  switch (requested) {
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0: return row_len % 32 == 0 ? requested : from;
    case GgmlType::kPagodaInt8: return row_len <= quant::kMaxInt8RowLength ? requested : from;
    default: break;
  }
  if (!is_awq(requested)) return from;
  for (GgmlType t : {GgmlType::kPagodaAwqInt4G128, GgmlType::kPagodaAwqInt4G64, GgmlType::kPagodaAwqInt4G32})
    if (awq_group(t) <= awq_group(requested) && row_len % awq_group(t) == 0) return t;
  return from;
}

Result<QuantizeReport> quantize_gguf(const QuantizeOptions& o) {
  if (!is_quantized_type(o.type))
    return make_error(fmt::format("cannot quantize to {} (supported: q8_0, q4_0, int8, awq_int4_g32|g64|g128)",
                                  ggml_type_name(o.type)));
  PAGODA_ASSIGN_OR_RETURN(GgufFile in, GgufFile::open(o.input_path));

  GgufWriter w;
  for (const auto& [key, value] : in.metadata()) w.set(key, value);
  w.set("general.file_type", GgufValue::u32(ggml_file_type(o.type)));

  QuantizeReport report;
  // Owned here until the writer has called every generator: the AWQ s of each scaled weight and its s^-1.
  std::vector<std::unique_ptr<std::vector<float>>> awq_scales;
  const int32_t num_tensors = int32_t(in.tensors().size());
  for (int32_t i = 0; i < num_tensors; ++i) {
    const GgufTensorInfo& t = in.tensors()[size_t(i)];
    // A tensor already quantized (in a type the requested one would have replaced) cannot be re-quantized.
    if (is_quantized_type(t.type) && t.dims.size() == 2 &&
        quantized_type_for(t.dims, GgmlType::kF32, o.type) != GgmlType::kF32 &&
        quantized_type_for(t.dims, GgmlType::kF32, o.type) != t.type)
      return make_error(fmt::format("{}: tensor '{}' is already {}; quantize from an f32/f16/bf16 file", o.input_path,
                                    t.name, ggml_type_name(t.type)));
    // The MoE router stays as it is, as llama.cpp keeps it: its logits choose the experts. So do LFM2's
    // convolution taps (rows of a few values, read as floats), and the tensors that are not weights (gpt-oss's
    // stacked expert biases, 2-D, and its sinks), as llama.cpp's quantizer keeps them.
    const bool kept = t.name.ends_with("ffn_gate_inp.weight") || t.name.ends_with("shortconv.conv.weight") ||
                      !t.name.ends_with(".weight");
    const GgmlType to = kept ? t.type : quantized_type_for(t.dims, t.type, o.type);
    QuantizedTensorReport row{t.name, t.dims, t.type, t.type, t.size_bytes, t.size_bytes};
    if (to == t.type) {
      w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      report.tensors.push_back(std::move(row));
      continue;
    }
    const int64_t row_len = t.dims[0];
    row.to = to;
    const int64_t num_rows = t.dims.size() == 3 ? t.dims[1] * t.dims[2] : t.dims[1];
    row.bytes_after = ggml_row_bytes(to, uint64_t(row_len)) * uint64_t(num_rows);
    const std::vector<float>* scales = nullptr;
    const std::vector<float>* inverse_scales = nullptr;
    const quant::LinearInputStats* stats = nullptr;
    if (is_awq(to) && o.calibration != nullptr && t.name != gguf_tensor::kTokenEmbedding) {
      const auto it = o.calibration->find(t.name);
      if (it != o.calibration->end()) {
        stats = &it->second;
        if (stats->num_in != row_len || stats->num_samples() == 0)
          return make_error(
              fmt::format("calibration statistics for '{}' have {} input channels and {} samples; the "
                          "tensor has rows of {}",
                          t.name, stats->num_in, stats->num_samples(), row_len));
        const std::vector<float> values = to_f32(t);
        quant::AwqScales found = quant::search_awq_scales(values.data(), t.dims[1], row_len, awq_group(to), *stats);
        row.has_awq_scale = true;
        row.awq_alpha = found.alpha;
        row.awq_mse_scaled = found.mse;
        row.awq_mse_unscaled = found.mse_unscaled;
        // The clipped values are recomputed when the tensor is written (deterministically), so that only s stays in
        // memory; this call is for the report's MSE.
        quant::clip_awq_groups(values.data(), t.dims[1], row_len, awq_group(to), found.scales, *stats, &row.awq_mse);
        auto inverse = std::make_unique<std::vector<float>>(found.scales.size());
        for (size_t c = 0; c < found.scales.size(); ++c) (*inverse)[c] = 1.0f / found.scales[c];
        awq_scales.push_back(std::make_unique<std::vector<float>>(std::move(found.scales)));
        scales = awq_scales.back().get();
        awq_scales.push_back(std::move(inverse));
        inverse_scales = awq_scales.back().get();
      }
    }
    const GgufTensorInfo* src = &t;
    w.add_tensor_generated(t.name, to, t.dims, row.bytes_after,
                           [src, to, row_len, scales, stats, i, num_tensors, &o](std::span<uint8_t> dst) {
                             std::vector<float> values = to_f32(*src);
                             quantize_rows(values, row_len, to, scales, stats, dst);
                             if (o.on_tensor) o.on_tensor(i + 1, num_tensors, src->name);
                           });
    report.tensors.push_back(std::move(row));
    if (inverse_scales != nullptr) {
      const std::string name = awq_input_scale_name(t.name);
      const uint64_t bytes = uint64_t(row_len) * sizeof(float);
      w.add_tensor(name, GgmlType::kF32, {row_len}, inverse_scales->data(), bytes);
      report.tensors.push_back(QuantizedTensorReport{name, {row_len}, GgmlType::kF32, GgmlType::kF32, 0, bytes});
    }
  }
  PAGODA_RETURN_IF_ERROR(w.write(o.output_path));
  if (o.on_tensor) o.on_tensor(num_tensors, num_tensors, "written");
  std::error_code ec;
  report.file_bytes_before = std::filesystem::file_size(o.input_path, ec);
  report.file_bytes_after = std::filesystem::file_size(o.output_path, ec);
  return report;
}

}  // namespace pagoda::format
