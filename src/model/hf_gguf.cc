// Writes an HF checkpoint's model metadata and tensors in llama.cpp's GGUF conventions.
#include "model/hf_gguf.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "core/half.h"
#include "format/gguf_names.h"
#include "model/architecture.h"

namespace pagoda {
namespace {

using format::GgmlType;
using format::GgufValue;

GgmlType ggml_type_of(DType dtype) {
  switch (dtype) {
    case DType::kF16: return GgmlType::kF16;
    case DType::kBF16: return GgmlType::kBF16;
    case DType::kMXFP4: return GgmlType::kMXFP4;
    default: return GgmlType::kF32;
  }
}

}  // namespace

format::GgufWriter hf_gguf_metadata(const HfCheckpoint& ckpt, const std::string& name) {
  const ModelConfig& c = ckpt.config();
  std::string model_name = name;
  if (model_name.empty()) {
    std::filesystem::path dir = std::filesystem::path(ckpt.dir()).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    model_name = dir.filename().string();
  }
  const TensorRef* embd = ckpt.tensors().find(format::gguf_tensor::kTokenEmbedding);
  return model_gguf_metadata(c, model_name, ggml_type_of(*embd->dtype));
}

format::GgufWriter model_gguf_metadata(const ModelConfig& c, const std::string& model_name, GgmlType file_type) {
  format::GgufWriter w;
  w.set(gguf_key::kArchitecture, GgufValue::string(c.architecture));
  w.set(gguf_key::kName, GgufValue::string(model_name));
  w.set(gguf_key::kAlignment, GgufValue::u32(32));
  w.set(gguf_key::kFileType, GgufValue::u32(format::ggml_file_type(file_type)));
  w.set(arch_key(c, gguf_key::kContextLength), GgufValue::u32(uint32_t(c.context_length)));
  w.set(arch_key(c, gguf_key::kEmbeddingLength), GgufValue::u32(uint32_t(c.dim)));
  w.set(arch_key(c, gguf_key::kBlockCount), GgufValue::u32(uint32_t(c.num_layers)));
  w.set(arch_key(c, gguf_key::kFeedForwardLength), GgufValue::u32(uint32_t(c.hidden_dim)));
  w.set(arch_key(c, gguf_key::kHeadCount), GgufValue::u32(uint32_t(c.num_heads)));
  w.set(arch_key(c, gguf_key::kHeadCountKv), GgufValue::u32(uint32_t(c.num_kv_heads)));
  w.set(arch_key(c, gguf_key::kKeyLength), GgufValue::u32(uint32_t(c.head_dim)));
  w.set(arch_key(c, gguf_key::kValueLength), GgufValue::u32(uint32_t(c.head_dim)));
  w.set(arch_key(c, gguf_key::kRopeDimensionCount), GgufValue::u32(uint32_t(c.rope_dim)));
  w.set(arch_key(c, gguf_key::kRopeFreqBase), GgufValue::f32(c.rope_theta));
  w.set(arch_key(c, gguf_key::kRmsEpsilon), GgufValue::f32(c.rms_eps));
  w.set(arch_key(c, gguf_key::kVocabSize), GgufValue::u32(uint32_t(c.vocab_size)));
  if (c.rope_scaling == RopeScalingType::kYarn) {
    // llama.cpp's converter's keys; the YaRN ones only where they differ from llama.cpp's defaults.
    w.set(arch_key(c, gguf_key::kRopeScalingType), GgufValue::string("yarn"));
    w.set(arch_key(c, gguf_key::kRopeScalingFactor), GgufValue::f32(1.0f / c.rope_freq_scale));
    w.set(arch_key(c, gguf_key::kRopeScalingOriginalContext), GgufValue::u32(uint32_t(c.rope_original_context)));
    if (c.yarn_ext_factor >= 0.0f) w.set(arch_key(c, gguf_key::kRopeScalingYarnExtFactor), GgufValue::f32(c.yarn_ext_factor));
    if (c.yarn_attn_factor != 1.0f)
      w.set(arch_key(c, gguf_key::kRopeScalingYarnAttnFactor), GgufValue::f32(c.yarn_attn_factor));
    if (c.yarn_beta_fast != 32.0f) w.set(arch_key(c, gguf_key::kRopeScalingYarnBetaFast), GgufValue::f32(c.yarn_beta_fast));
    if (c.yarn_beta_slow != 1.0f) w.set(arch_key(c, gguf_key::kRopeScalingYarnBetaSlow), GgufValue::f32(c.yarn_beta_slow));
    if (c.yarn_log_multiplier != 0.0f)
      w.set(arch_key(c, gguf_key::kRopeScalingYarnLogMultiplier), GgufValue::f32(c.yarn_log_multiplier));
  } else if (c.rope_freq_scale != 1.0f) {
    w.set(arch_key(c, gguf_key::kRopeScalingType), GgufValue::string("linear"));
    w.set(arch_key(c, gguf_key::kRopeScalingFactor), GgufValue::f32(1.0f / c.rope_freq_scale));
  }
  const ArchitectureFamily* family = find_architecture(c.architecture);
  if (family != nullptr && family->write_gguf != nullptr) family->write_gguf(c, w);
  return w;
}

Status write_hf_gguf(const HfCheckpoint& ckpt, format::GgufWriter& metadata, const std::string& output) {
  std::vector<std::vector<float>> widened;  // 1-D F16/BF16 tensors as F32; alive until write() returns
  widened.reserve(ckpt.tensor_order().size());
  for (const std::string& tensor_name : ckpt.tensor_order()) {
    const TensorRef& t = *ckpt.tensors().find(tensor_name);
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    const uint64_t bytes = uint64_t(dtype_row_bytes(*t.dtype, t.dims[0])) * uint64_t(n / t.dims[0]);
    if (!t.slices.empty()) {
      // Stacked experts: the slices one after another, copied as the file is written.
      const uint64_t slice_bytes = uint64_t(n / t.dims.back()) * (*t.dtype == DType::kF32 ? 4 : 2);
      const std::vector<const void*> slices = t.slices;
      metadata.add_tensor_generated(tensor_name, ggml_type_of(*t.dtype), t.dims, slice_bytes * slices.size(),
                                    [slices, slice_bytes](std::span<uint8_t> dst) {
                                      for (size_t e = 0; e < slices.size(); ++e)
                                        std::memcpy(dst.data() + e * slice_bytes, slices[e], slice_bytes);
                                    });
    } else if (t.dims.size() == 1 && *t.dtype != DType::kF32) {
      std::vector<float>& f = widened.emplace_back(size_t(n));
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t v = static_cast<const uint16_t*>(t.data)[i];
        f[size_t(i)] = *t.dtype == DType::kF16 ? fp16_to_float(v) : bf16_to_float(v);
      }
      metadata.add_tensor(tensor_name, GgmlType::kF32, t.dims, f.data(), uint64_t(n) * 4);
    } else {
      metadata.add_tensor(tensor_name, ggml_type_of(*t.dtype), t.dims, t.data, bytes);
    }
  }
  return metadata.write(output);
}

}  // namespace pagoda
