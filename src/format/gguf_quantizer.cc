// GGUF -> quantized GGUF, one tensor at a time (GgufWriter::add_tensor_generated), so memory stays at one
// tensor's f32 copy whatever the model size.
#include "format/gguf_quantizer.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "core/half.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"

namespace pagoda::format {
namespace {

void to_f32(const GgufTensorInfo& t, float* out) {
  const int64_t n = t.num_elements();
  switch (t.type) {
    case GgmlType::kF32: std::memcpy(out, t.data, size_t(n) * sizeof(float)); break;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_float(static_cast<const uint16_t*>(t.data)[i]);
      break;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(static_cast<const uint16_t*>(t.data)[i]);
      break;
    default: break;  // excluded by the caller
  }
}

}  // namespace

Result<QuantizeReport> quantize_gguf(const QuantizeOptions& o) {
  if (o.type != GgmlType::kQ8_0 && o.type != GgmlType::kQ4_0)
    return make_error(fmt::format("cannot quantize to {} (supported: q8_0, q4_0)", ggml_type_name(o.type)));
  PAGODA_ASSIGN_OR_RETURN(GgufFile in, GgufFile::open(o.input_path));

  GgufWriter w;
  for (const auto& [key, value] : in.metadata()) w.set(key, value);
  w.set("general.file_type", GgufValue::u32(ggml_file_type(o.type)));

  QuantizeReport report;
  const int32_t num_tensors = int32_t(in.tensors().size());
  for (int32_t i = 0; i < num_tensors; ++i) {
    const GgufTensorInfo& t = in.tensors()[size_t(i)];
    const bool is_float = t.type == GgmlType::kF32 || t.type == GgmlType::kF16 || t.type == GgmlType::kBF16;
    const bool fits = t.dims.size() == 2 && t.dims[0] % 32 == 0;
    if (!is_float && t.type != o.type && fits)
      return make_error(fmt::format("{}: tensor '{}' is already {}; quantize from an f32/f16/bf16 file", o.input_path,
                                    t.name, ggml_type_name(t.type)));
    QuantizedTensorReport row{t.name, t.dims, t.type, t.type, t.size_bytes, t.size_bytes};
    if (is_float && fits) {
      row.to = o.type;
      row.bytes_after = ggml_row_bytes(o.type, uint64_t(t.dims[0])) * uint64_t(t.dims[1]);
      const GgufTensorInfo* src = &t;
      const GgmlType type = o.type;
      w.add_tensor_generated(
          t.name, type, t.dims, row.bytes_after, [src, type, i, num_tensors, &o](std::span<uint8_t> dst) {
            std::vector<float> values(static_cast<size_t>(src->num_elements()));
            to_f32(*src, values.data());
            const int64_t n = src->num_elements();
            if (type == GgmlType::kQ8_0)
              quant::quantize_row_q8_0(values.data(), reinterpret_cast<quant::BlockQ8_0*>(dst.data()), n);
            else
              quant::quantize_row_q4_0(values.data(), reinterpret_cast<quant::BlockQ4_0*>(dst.data()), n);
            if (o.on_tensor) o.on_tensor(i + 1, num_tensors, src->name);
          });
    } else {
      w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
    }
    report.tensors.push_back(std::move(row));
  }
  PAGODA_RETURN_IF_ERROR(w.write(o.output_path));
  if (o.on_tensor) o.on_tensor(num_tensors, num_tensors, "written");
  std::error_code ec;
  report.file_bytes_before = std::filesystem::file_size(o.input_path, ec);
  report.file_bytes_after = std::filesystem::file_size(o.output_path, ec);
  return report;
}

}  // namespace pagoda::format
