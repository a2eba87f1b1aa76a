// Maps HF tensor names to GGUF names, checking each shape against config.json.
#include "model/hf_checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "format/gguf_names.h"
#include "model/architecture.h"
#include "model/model_weights.h"

namespace pagoda {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// llama.cpp's LlamaModel.permute: within each head the rows of the two halves are interleaved, so row 2i is old
// row i and row 2i+1 is old row head_dim/2 + i. `rows` of `row_bytes` each, `num_heads` heads.
std::vector<uint8_t> permute_rows_for_adjacent_rope(const uint8_t* src, int64_t rows, int64_t row_bytes,
                                                    int64_t num_heads) {
  std::vector<uint8_t> out(size_t(rows * row_bytes));
  const int64_t head_rows = rows / num_heads, half = head_rows / 2;
  for (int64_t h = 0; h < num_heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t part = 0; part < 2; ++part) {
        const int64_t dst_row = h * head_rows + 2 * i + part, src_row = h * head_rows + part * half + i;
        std::memcpy(out.data() + dst_row * row_bytes, src + src_row * row_bytes, size_t(row_bytes));
      }
  return out;
}

}  // namespace

bool is_hf_model_folder(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) &&
         std::filesystem::exists(std::filesystem::path(path) / "config.json", ec);
}

Result<std::unique_ptr<HfCheckpoint>> HfCheckpoint::open(const std::string& dir) {
  std::unique_ptr<HfCheckpoint> c(new HfCheckpoint());
  c->dir_ = dir;
  PAGODA_ASSIGN_OR_RETURN(c->hf_, read_hf_config(dir));
  PAGODA_ASSIGN_OR_RETURN(format::SafetensorsCheckpoint st, format::SafetensorsCheckpoint::open_folder(dir));
  c->safetensors_ = std::make_unique<format::SafetensorsCheckpoint>(std::move(st));
  PAGODA_RETURN_IF_ERROR(c->map_tensors());
  return c;
}

Status HfCheckpoint::map_tensors() {
  const ModelConfig& c = hf_.config;
  tensors_.source = dir_;
  const std::string config_path = (std::filesystem::path(dir_) / "config.json").string();
  using Rewrite = HfTensor::Rewrite;
  // One HF tensor, shape-checked against config.json (PyTorch order).
  auto find = [&](const std::string& hf_name, const HfTensor& spec) -> Result<const format::SafetensorsTensor*> {
    const format::SafetensorsTensor* t = safetensors_->find(hf_name);
    // Embedding checkpoints saved from the bare backbone (Qwen3-Embedding) name its tensors without "model.", as
    // llama.cpp's tensor map also accepts.
    if (t == nullptr && hf_name.starts_with("model.")) t = safetensors_->find(hf_name.substr(6));
    if (t == nullptr)
      return make_error(
          fmt::format("{}: missing tensor {} (needed by {})", safetensors_->describe(), hf_name, hf_.hf_architecture));
    if (t->shape != spec.shape)
      return make_error(fmt::format("{}: {} has shape {} but {} gives {} ({})", *t->file, hf_name,
                                    shape_string(t->shape), config_path, shape_string(spec.shape), spec.fields));
    return t;
  };
  auto add_owned_f32 = [&](const std::string& gguf_name, const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    owned_.push_back(std::move(bytes));
    tensors_.tensors[gguf_name] = TensorRef{DType::kF32, "F32", {int64_t(values.size())}, owned_.back().data(), {}};
    order_.push_back(gguf_name);
  };
  auto add = [&](const HfTensor& spec) -> Status {
    TensorRef r;
    if (!spec.hf_slices.empty()) {
      // Stacked experts: one HF tensor per expert, the GGUF tensor [.., num_experts] points at each.
      for (const std::string& name : spec.hf_slices) {
        PAGODA_ASSIGN_OR_RETURN(const format::SafetensorsTensor* t, find(name, spec));
        if (!r.slices.empty() && t->dtype != *r.dtype)
          return make_error(fmt::format("{}: {} is {} but the other experts' are {}", *t->file, name,
                                        format::safetensors_dtype_name(t->dtype), dtype_name(*r.dtype)));
        r.dtype = t->dtype;
        r.type_name = std::string(format::safetensors_dtype_name(t->dtype));
        r.slices.push_back(t->data);
      }
      r.dims.assign(spec.shape.rbegin(), spec.shape.rend());
      r.dims.push_back(int64_t(spec.hf_slices.size()));
    } else {
      PAGODA_ASSIGN_OR_RETURN(const format::SafetensorsTensor* t, find(spec.hf_name, spec));
      r.dtype = t->dtype;
      r.type_name = std::string(format::safetensors_dtype_name(t->dtype));
      r.dims.assign(t->shape.rbegin(), t->shape.rend());
      r.data = t->data;
      if (spec.rewrite == Rewrite::kPermuteQ || spec.rewrite == Rewrite::kPermuteK) {
        const int64_t row_bytes = int64_t(t->size_bytes) / spec.shape[0];
        owned_.push_back(
            permute_rows_for_adjacent_rope(static_cast<const uint8_t*>(t->data), spec.shape[0], row_bytes,
                                           spec.rewrite == Rewrite::kPermuteQ ? c.num_heads : c.num_kv_heads));
        r.data = owned_.back().data();
      } else if (spec.rewrite == Rewrite::kAddOne || spec.rewrite == Rewrite::kToF32 ||
                 spec.rewrite == Rewrite::kSqueezeToF32) {
        if (spec.rewrite == Rewrite::kSqueezeToF32) std::erase(r.dims, int64_t(1));
        // Gemma's norms scale by (1 + w): stored as the sum in f32, as llama.cpp's converter writes them; a gate
        // vector is stored in f32 as it is.
        int64_t n = 1;
        for (int64_t d : spec.shape) n *= d;
        std::vector<float> values(static_cast<size_t>(n));
        dequantize_row(t->dtype, t->data, values.data(), n);
        if (spec.rewrite == Rewrite::kAddOne)
          for (float& v : values) v += 1.0f;
        add_owned_f32(spec.gguf_name, values);
        tensors_.tensors[spec.gguf_name].dims = r.dims;
        return Status::ok_status();
      }
    }
    tensors_.tensors[spec.gguf_name] = std::move(r);
    order_.push_back(spec.gguf_name);
    return Status::ok_status();
  };
  const HfFamily* family = find_hf_family(hf_.hf_architecture);
  PAGODA_CHECK(family != nullptr, "parse_hf_config accepted an architecture without a family");
  const int64_t dim = c.dim, vocab = c.vocab_size;
  using Kind = HfTensor::Kind;
  const Rewrite norm = hf_.norms_plus_one ? Rewrite::kAddOne : Rewrite::kNone;
  PAGODA_RETURN_IF_ERROR(add({"model.embed_tokens.weight",
                              {},
                              format::gguf_tensor::kTokenEmbedding,
                              {vocab, dim},
                              "vocab_size, hidden_size"}));
  if (!c.rope_freq_factors.empty()) add_owned_f32("rope_freqs.weight", c.rope_freq_factors);
  if (!c.rope_long_factors.empty()) {
    add_owned_f32("rope_factors_long.weight", c.rope_long_factors);
    add_owned_f32("rope_factors_short.weight", c.rope_short_factors);
  }
  std::vector<HfTensor> layer;
  for (int32_t l = 0; l < c.num_layers; ++l) {
    layer.clear();
    family->layer_tensors(hf_, l, layer);
    for (const HfTensor& spec : layer) PAGODA_RETURN_IF_ERROR(add(spec));
  }
  if (c.output_norm_is_token_embd_norm) {
    PAGODA_RETURN_IF_ERROR(add({"model.embedding_norm.weight", {}, format::gguf_tensor::kTokenEmbeddingNorm, {dim},
                                "hidden_size", Kind::kNorm, norm}));
  } else {
    PAGODA_RETURN_IF_ERROR(
        add({"model.norm.weight", {}, format::gguf_tensor::kOutputNorm, {dim}, "hidden_size", Kind::kNorm, norm}));
  }
  // Tied embeddings: no output.weight, as llama.cpp writes them (a stored lm_head copy is ignored).
  if (!hf_.tie_word_embeddings)
    PAGODA_RETURN_IF_ERROR(
        add({"lm_head.weight", {}, format::gguf_tensor::kOutput, {vocab, dim}, "vocab_size, hidden_size"}));
  return Status::ok_status();
}

}  // namespace pagoda
