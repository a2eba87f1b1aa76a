// Writes an HF checkpoint's metadata and tensors in llama.cpp's GGUF conventions.
#include "model/hf_gguf.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/half.h"
#include "format/placeholder_vocabulary.h"

namespace pagoda {
namespace {

using format::GgmlType;
using format::GgufValue;

GgmlType ggml_type_of(DType dtype) {
  switch (dtype) {
    case DType::kF16: return GgmlType::kF16;
    case DType::kBF16: return GgmlType::kBF16;
    default: return GgmlType::kF32;
  }
}

}  // namespace

HfGgufMetadata hf_gguf_metadata(const HfCheckpoint& ckpt, const std::string& name, const std::string& chat_template) {
  HfGgufMetadata m;
  format::GgufWriter& w = m.writer;
  const ModelConfig& c = ckpt.config();
  const std::string a = c.architecture + ".";
  std::string model_name = name;
  if (model_name.empty()) {
    std::filesystem::path dir = std::filesystem::path(ckpt.dir()).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    model_name = dir.filename().string();
  }
  const TensorRef* embd = ckpt.tensors().find("token_embd.weight");
  w.set("general.architecture", GgufValue::string(c.architecture));
  w.set("general.name", GgufValue::string(model_name));
  w.set("general.alignment", GgufValue::u32(32));
  w.set("general.file_type", GgufValue::u32(format::ggml_file_type(ggml_type_of(*embd->dtype))));
  w.set(a + "context_length", GgufValue::u32(uint32_t(c.context_length)));
  w.set(a + "embedding_length", GgufValue::u32(uint32_t(c.dim)));
  w.set(a + "block_count", GgufValue::u32(uint32_t(c.num_layers)));
  w.set(a + "feed_forward_length", GgufValue::u32(uint32_t(c.hidden_dim)));
  w.set(a + "attention.head_count", GgufValue::u32(uint32_t(c.num_heads)));
  w.set(a + "attention.head_count_kv", GgufValue::u32(uint32_t(c.num_kv_heads)));
  w.set(a + "attention.key_length", GgufValue::u32(uint32_t(c.head_dim)));
  w.set(a + "attention.value_length", GgufValue::u32(uint32_t(c.head_dim)));
  w.set(a + "rope.dimension_count", GgufValue::u32(uint32_t(c.rope_dim)));
  w.set(a + "rope.freq_base", GgufValue::f32(c.rope_theta));
  w.set(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(c.rms_eps));
  w.set(a + "vocab_size", GgufValue::u32(uint32_t(c.vocab_size)));
  // TODO(bpe): tokenizer.json -> tokenizer.ggml.model "gpt2" + tokenizer.ggml.pre once src/tokenizer reads it.
  format::add_placeholder_vocabulary(w, c.vocab_size);
  std::error_code ec;
  m.tokenizer_note = std::filesystem::exists(std::filesystem::path(ckpt.dir()) / "tokenizer.json", ec)
                         ? fmt::format(
                               "{}/tokenizer.json is not read yet: using a placeholder vocabulary of {} tokens (text "
                               "is not the model's; token ids are)",
                               ckpt.dir(), c.vocab_size)
                         : fmt::format("{} has no tokenizer.json: using a placeholder vocabulary of {} tokens",
                                       ckpt.dir(), c.vocab_size);
  if (!chat_template.empty()) w.set("tokenizer.chat_template", GgufValue::string(chat_template));
  return m;
}

Result<HfConvertResult> convert_hf_to_gguf(const HfCheckpoint& ckpt, const std::string& output, const std::string& name,
                                           const std::string& chat_template) {
  HfGgufMetadata m = hf_gguf_metadata(ckpt, name, chat_template);
  std::vector<std::vector<float>> widened;  // 1-D F16/BF16 tensors as F32; alive until write() returns
  widened.reserve(ckpt.tensor_order().size());
  for (const std::string& tensor_name : ckpt.tensor_order()) {
    const TensorRef& t = *ckpt.tensors().find(tensor_name);
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    if (t.dims.size() == 1 && *t.dtype != DType::kF32) {
      std::vector<float>& f = widened.emplace_back(size_t(n));
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t v = static_cast<const uint16_t*>(t.data)[i];
        f[size_t(i)] = *t.dtype == DType::kF16 ? fp16_to_float(v) : bf16_to_float(v);
      }
      m.writer.add_tensor(tensor_name, GgmlType::kF32, t.dims, f.data(), uint64_t(n) * 4);
    } else {
      m.writer.add_tensor(tensor_name, ggml_type_of(*t.dtype), t.dims, t.data,
                          uint64_t(n) * (*t.dtype == DType::kF32 ? 4 : 2));
    }
  }
  PAGODA_RETURN_IF_ERROR(m.writer.write(output));
  return HfConvertResult{m.tokenizer_note};
}

}  // namespace pagoda
