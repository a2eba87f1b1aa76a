// One tensor at a time, in llama-quantize's order: its f32 copy quantized into the type the mixture chose
// (GgufWriter::add_tensor_generated), so memory stays at one tensor's f32 copy whatever the model size.
#include "format/llama_quantizer.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "core/half.h"
#include "format/gguf_names.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "quant/block_kquants.h"
#include "quant/block_q8_0.h"
#include "quant/iq4_quantize.h"
#include "quant/kquant_quantize.h"
#include "quant/legacy_quantize.h"

namespace pagoda::format {
namespace {

constexpr const char* kQuantizationVersionKey = "general.quantization_version";
constexpr uint32_t kGgmlQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION
constexpr size_t kMaxOverrideString = 127;        // llama-quantize's string overrides hold 127 bytes

bool is_float_tensor(GgmlType t) { return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16; }

std::vector<float> tensor_values_f32(const GgufTensorInfo& t) {
  const int64_t n = t.num_elements();
  std::vector<float> out(static_cast<size_t>(n));
  const auto* half = static_cast<const uint16_t*>(t.data);
  switch (t.type) {
    case GgmlType::kF32: std::memcpy(out.data(), t.data, size_t(n) * sizeof(float)); break;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) out[size_t(i)] = fp16_to_float(half[i]);
      break;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) out[size_t(i)] = bf16_to_float(half[i]);
      break;
    default: PAGODA_CHECK(false, "tensor_values_f32 of {}", ggml_type_name(t.type));
  }
  return out;
}

// Rows of `row_len` values -> `to`, with per-column importance (nullptr for none) shared by the rows.
void quantize_rows_as(GgmlType to, const float* x, uint8_t* dst, int64_t num_rows, int64_t row_len,
                   const float* importance) {
  using namespace quant;
  switch (to) {
    case GgmlType::kQ2_K:
      return quantize_rows_q2_K(x, reinterpret_cast<BlockQ2_K*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ3_K:
      return quantize_rows_q3_K(x, reinterpret_cast<BlockQ3_K*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ4_K:
      return quantize_rows_q4_K(x, reinterpret_cast<BlockQ4_K*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ5_K:
      return quantize_rows_q5_K(x, reinterpret_cast<BlockQ5_K*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ6_K:
      return quantize_rows_q6_K(x, reinterpret_cast<BlockQ6_K*>(dst), num_rows, row_len, importance);
    case GgmlType::kIQ4_XS:
      return quantize_rows_iq4_xs(x, reinterpret_cast<BlockIQ4_XS*>(dst), num_rows, row_len, importance);
    case GgmlType::kIQ4_NL:
      return quantize_rows_iq4_nl(x, reinterpret_cast<BlockIQ4_NL*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ4_0:
      return quantize_rows_q4_0(x, reinterpret_cast<BlockQ4_0*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ4_1:
      return quantize_rows_q4_1(x, reinterpret_cast<BlockQ4_1*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ5_0:
      return quantize_rows_q5_0(x, reinterpret_cast<BlockQ5_0*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ5_1:
      return quantize_rows_q5_1(x, reinterpret_cast<BlockQ5_1*>(dst), num_rows, row_len, importance);
    case GgmlType::kQ8_0:  // ggml's Q8_0 takes no importance weights
      return quantize_row_q8_0(x, reinterpret_cast<BlockQ8_0*>(dst), num_rows * row_len);
    case GgmlType::kF16: {
      auto* out = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < num_rows * row_len; ++i) out[i] = float_to_fp16(x[i]);
      return;
    }
    default: PAGODA_CHECK(false, "no quantizer for {}", ggml_type_name(to));
  }
}

Result<MixtureModelFacts> model_facts(const GgufFile& in) {
  MixtureModelFacts f;
  PAGODA_ASSIGN_OR_RETURN(std::optional<std::string> arch, in.get_string(gguf_key::kArchitecture));
  f.arch = arch.value_or("");
  // A per-layer array (hybrid models' head_count_kv: 0 on a recurrent layer) counts as its layer 0's entry, as
  // llama.cpp's n_gqa() reads it.
  const auto read = [&](std::string_view suffix) -> Result<int32_t> {
    const std::string key = gguf_key::arch_key(f.arch, suffix);
    if (const GgufValue* v = in.find(key); v != nullptr && v->type == GgufValueType::kArray) {
      PAGODA_ASSIGN_OR_RETURN(auto values, in.get_i32_array(key));
      return values && !values->empty() ? (*values)[0] : 0;
    }
    PAGODA_ASSIGN_OR_RETURN(std::optional<int64_t> v, in.get_i64(key));
    return int32_t(v.value_or(0));
  };
  PAGODA_ASSIGN_OR_RETURN(f.num_layers, read(gguf_key::kBlockCount));
  PAGODA_ASSIGN_OR_RETURN(f.num_experts, read("expert_count"));
  PAGODA_ASSIGN_OR_RETURN(f.num_heads, read(gguf_key::kHeadCount));
  PAGODA_ASSIGN_OR_RETURN(f.num_kv_heads, read(gguf_key::kHeadCountKv));
  if (f.num_kv_heads == 0) f.num_kv_heads = f.num_heads;
  return f;
}

}  // namespace

Result<QuantizeReport> quantize_gguf_llama(const LlamaQuantizeOptions& o) {
  PAGODA_ASSIGN_OR_RETURN(GgufFile in, GgufFile::open(o.input_path));
  PAGODA_ASSIGN_OR_RETURN(MixtureModelFacts facts, model_facts(in));

  std::vector<MixtureTensor> listed;
  for (const GgufTensorInfo& t : in.tensors()) listed.push_back({t.name, t.dims, t.type});
  const std::vector<size_t> order = llama_tensor_order(listed);
  std::vector<MixtureTensor> ordered;
  for (size_t i : order) ordered.push_back(listed[i]);
  PAGODA_ASSIGN_OR_RETURN(std::vector<GgmlType> types,
                          llama_tensor_types(ordered, o.file_type, facts, o.imatrix != nullptr));

  GgufWriter w;
  for (const auto& [key, value] : in.metadata()) {
    if (key == kQuantizationVersionKey || key == gguf_key::kFileType || key == gguf_key::kSplitNo ||
        key == gguf_key::kSplitCount || key == gguf_key::kSplitTensorsCount)
      continue;
    w.set(key, value);
  }
  w.set(kQuantizationVersionKey, GgufValue::u32(kGgmlQuantizationVersion));
  w.set(gguf_key::kFileType, GgufValue::u32(uint32_t(o.file_type)));
  if (o.imatrix != nullptr) {
    w.set("quantize.imatrix.file", GgufValue::string(o.imatrix_path.substr(0, kMaxOverrideString)));
    if (!o.imatrix->datasets.empty())
      w.set("quantize.imatrix.dataset", GgufValue::string(o.imatrix->datasets[0].substr(0, kMaxOverrideString)));
    w.set("quantize.imatrix.entries_count", GgufValue::u32(uint32_t(o.imatrix->weights.size())));
    if (o.imatrix->chunk_count > 0)
      w.set("quantize.imatrix.chunks_count", GgufValue::u32(o.imatrix->chunk_count));
  }

  QuantizeReport report;
  const int32_t num_tensors = int32_t(order.size());
  for (int32_t k = 0; k < num_tensors; ++k) {
    const GgufTensorInfo& t = in.tensors()[order[size_t(k)]];
    const GgmlType to = types[size_t(k)];
    QuantizedTensorReport row{t.name, t.dims, t.type, to, t.size_bytes, t.size_bytes};
    if (to == t.type) {
      w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      report.tensors.push_back(std::move(row));
      continue;
    }
    if (!is_float_tensor(t.type))
      return make_error(fmt::format("{}: tensor '{}' is {}; quantize from an f32/f16/bf16 file", o.input_path,
                                    t.name, ggml_type_name(t.type)));
    const int64_t row_len = t.dims[0];
    const int64_t rows_per_matrix = t.dims.size() > 1 ? t.dims[1] : 1;
    int64_t num_matrices = 1;
    for (size_t d = 2; d < t.dims.size(); ++d) num_matrices *= t.dims[d];
    const float* importance = nullptr;
    if (o.imatrix != nullptr && to != GgmlType::kF16) {
      const auto it = o.imatrix->weights.find(t.name);
      if (it != o.imatrix->weights.end()) {
        if (int64_t(it->second.size()) == row_len * num_matrices)
          importance = it->second.data();
        else if (t.name != gguf_tensor::kTokenEmbedding && t.name != "per_layer_token_embd.weight")
          return make_error(fmt::format("the importance matrix has {} values for '{}'; the tensor needs {} ({} per "
                                        "row{})",
                                        it->second.size(), t.name, row_len * num_matrices, row_len,
                                        num_matrices > 1 ? fmt::format(", {} matrices", num_matrices) : ""));
      }
    }
    row.bytes_after = ggml_row_bytes(to, uint64_t(row_len)) * uint64_t(rows_per_matrix * num_matrices);
    const GgufTensorInfo* src = &t;
    w.add_tensor_generated(
        t.name, to, t.dims, row.bytes_after,
        [src, to, row_len, rows_per_matrix, num_matrices, importance, k, num_tensors, &o](std::span<uint8_t> dst) {
          const std::vector<float> values = tensor_values_f32(*src);
          const uint64_t matrix_bytes = ggml_row_bytes(to, uint64_t(row_len)) * uint64_t(rows_per_matrix);
          for (int64_t e = 0; e < num_matrices; ++e)
            quantize_rows_as(to, values.data() + e * rows_per_matrix * row_len, dst.data() + uint64_t(e) * matrix_bytes,
                          rows_per_matrix, row_len, importance != nullptr ? importance + e * row_len : nullptr);
          if (o.on_tensor) o.on_tensor(k + 1, num_tensors, src->name);
        });
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
