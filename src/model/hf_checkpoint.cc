// Maps HF tensor names to GGUF names, checking each shape against config.json.
#include "model/hf_checkpoint.h"

#include <fmt/format.h>

#include <cmath>
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

// OpenAI's MXFP4 ([outer, rows, nb] blocks of 16 bytes, value 2i in byte i's low nibble and 2i + 1 in its high one,
// and [outer, rows, nb] e8m0 exponents) as ggml's MXFP4 blocks (the exponent, then value i in byte i's low nibble and
// i + 16 in its high one), the rows of `parity` only (0 even, 1 odd, -1 every row).
std::vector<uint8_t> repack_mxfp4(const uint8_t* blocks, const uint8_t* scales, int64_t outer, int64_t rows,
                                  int64_t nb, int parity) {
  constexpr int64_t kBlockBytes = 17;
  const int64_t out_rows = parity < 0 ? rows : rows / 2;
  std::vector<uint8_t> out(size_t(outer * out_rows * nb * kBlockBytes));
  uint8_t* dst = out.data();
  for (int64_t e = 0; e < outer; ++e)
    for (int64_t r = 0; r < out_rows; ++r) {
      const int64_t src_row = e * rows + (parity < 0 ? r : 2 * r + parity);
      for (int64_t b = 0; b < nb; ++b, dst += kBlockBytes) {
        const uint8_t* q = blocks + (src_row * nb + b) * 16;
        const auto value = [q](int k) { return uint8_t((q[k / 2] >> (4 * (k % 2))) & 0x0F); };
        dst[0] = scales[src_row * nb + b];
        for (int i = 0; i < 16; ++i) dst[1 + i] = uint8_t(value(i) | (value(i + 16) << 4));
      }
    }
  return out;
}

// llama.cpp's _reorder_v_heads: value heads grouped by key head (group g's r-th at g * R + r) to tiled order (at
// r * K + g), for K key heads of R value heads each. `rows` rows of `row_bytes`, the heads after `offset_rows`.
std::vector<uint8_t> tile_v_head_rows(const uint8_t* src, int64_t rows, int64_t row_bytes, int64_t offset_rows,
                                      int64_t k_heads, int64_t v_heads) {
  std::vector<uint8_t> out(src, src + rows * row_bytes);
  const int64_t per_k = v_heads / k_heads, head_rows = (rows - offset_rows) / v_heads;
  const int64_t head_bytes = head_rows * row_bytes;
  for (int64_t n = 0; n < v_heads; ++n) {
    const int64_t r = n / k_heads, g = n % k_heads, old = g * per_k + r;
    std::memcpy(out.data() + offset_rows * row_bytes + n * head_bytes, src + offset_rows * row_bytes + old * head_bytes,
                size_t(head_bytes));
  }
  return out;
}

// Qwen3-Next's in_proj_qkvz rows (per key head: q and k of head_dim rows each, then v and z of v_per_k * head_dim
// rows each), regrouped as llama.cpp's converter does: every q, every k, every v (attn_qkv), or every z (attn_gate).
std::vector<uint8_t> split_qkvz_rows(const uint8_t* src, int64_t row_bytes, int64_t k_heads, int64_t head_dim,
                                     int64_t v_per_k, bool z) {
  const int64_t v_rows = v_per_k * head_dim, group_rows = 2 * head_dim + 2 * v_rows;
  std::vector<uint8_t> out;
  const auto take = [&](int64_t offset, int64_t rows) {
    for (int64_t g = 0; g < k_heads; ++g) {
      const uint8_t* from = src + (g * group_rows + offset) * row_bytes;
      out.insert(out.end(), from, from + rows * row_bytes);
    }
  };
  if (z) {
    take(2 * head_dim + v_rows, v_rows);
  } else {
    take(0, head_dim);
    take(head_dim, head_dim);
    take(2 * head_dim, v_rows);
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
  if (!c->hf_.multimodal_architecture.empty())
    c->note_ = fmt::format("{}: a {} checkpoint: its text model ({}) is loaded, its vision tower (vision_config, "
                           "model.visual.*) is not, so the model reads text only",
                           dir, c->hf_.multimodal_architecture, c->hf_.hf_architecture);
  return c;
}

Status HfCheckpoint::map_tensors() {
  const ModelConfig& c = hf_.config;
  tensors_.source = dir_;
  const std::string config_path = (std::filesystem::path(dir_) / "config.json").string();
  using Rewrite = HfTensor::Rewrite;
  // One HF tensor, shape-checked against config.json (PyTorch order): `shape` (the spec's unless given), raw bytes
  // (U8) exactly when `bytes`.
  auto find_shaped = [&](const std::string& hf_name, const HfTensor& spec, const std::vector<int64_t>& shape,
                         bool bytes) -> Result<const format::SafetensorsTensor*> {
    const format::SafetensorsTensor* t = safetensors_->find(hf_name);
    // A multimodal checkpoint keeps its text model under "model.language_model." (lm_head stays on top).
    if (t == nullptr && !hf_.multimodal_architecture.empty() && hf_name.starts_with("model."))
      t = safetensors_->find("model.language_model." + hf_name.substr(6));
    // Embedding checkpoints saved from the bare backbone (Qwen3-Embedding) name its tensors without "model.", as
    // llama.cpp's tensor map also accepts.
    if (t == nullptr && hf_name.starts_with("model.")) t = safetensors_->find(hf_name.substr(6));
    if (t == nullptr)
      return make_error(
          fmt::format("{}: missing tensor {} (needed by {})", safetensors_->describe(), hf_name, hf_.hf_architecture));
    if (t->shape != shape)
      return make_error(fmt::format("{}: {} has shape {} but {} gives {} ({})", *t->file, hf_name,
                                    shape_string(t->shape), config_path, shape_string(shape), spec.fields));
    if (t->bytes != bytes)
      return make_error(fmt::format("{}: {} is {} but {} needs {}", *t->file, hf_name,
                                    t->bytes ? "U8" : format::safetensors_dtype_name(t->dtype), hf_.hf_architecture,
                                    bytes ? "U8 (MXFP4)" : "F32, F16 or BF16"));
    return t;
  };
  auto find = [&](const std::string& hf_name, const HfTensor& spec) {
    return find_shaped(hf_name, spec, spec.shape, false);
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
    const bool split_rows = spec.rewrite == Rewrite::kEvenRows || spec.rewrite == Rewrite::kOddRows;
    const int parity = spec.rewrite == Rewrite::kEvenRows ? 0 : spec.rewrite == Rewrite::kOddRows ? 1 : -1;
    if (split_rows && (spec.shape.size() < 2 || spec.shape[1] % 2 != 0))
      return make_error(fmt::format("{}: {} has no even count of interleaved rows to split", config_path, spec.hf_name));
    if (spec.kind == HfTensor::Kind::kMxfp4) {
      // [outer, rows, cols] as blocks [outer, rows, cols / 32, 16] and exponents [outer, rows, cols / 32].
      PAGODA_CHECK(spec.shape.size() == 3, "MXFP4 experts are [experts, rows, cols]");
      const int64_t outer = spec.shape[0], rows = spec.shape[1], cols = spec.shape[2];
      if (cols % 32 != 0)
        return make_error(fmt::format("{}: {} rows of {} values are not whole MXFP4 blocks of 32 ({})", config_path,
                                      spec.hf_name, cols, spec.fields));
      PAGODA_ASSIGN_OR_RETURN(const format::SafetensorsTensor* blocks,
                              find_shaped(spec.hf_name + "_blocks", spec, {outer, rows, cols / 32, 16}, true));
      PAGODA_ASSIGN_OR_RETURN(const format::SafetensorsTensor* scales,
                              find_shaped(spec.hf_name + "_scales", spec, {outer, rows, cols / 32}, true));
      owned_.push_back(repack_mxfp4(static_cast<const uint8_t*>(blocks->data),
                                    static_cast<const uint8_t*>(scales->data), outer, rows, cols / 32, parity));
      tensors_.tensors[spec.gguf_name] =
          TensorRef{DType::kMXFP4, "mxfp4", {cols, split_rows ? rows / 2 : rows, outer}, owned_.back().data(), {}};
      order_.push_back(spec.gguf_name);
      return Status::ok_status();
    }
    if (split_rows) {
      // An interleaved bias [outer, rows, inner...]: the rows of one parity, in f32.
      PAGODA_ASSIGN_OR_RETURN(const format::SafetensorsTensor* t, find(spec.hf_name, spec));
      const int64_t outer = spec.shape[0], rows = spec.shape[1], inner = t->num_elements() / (outer * rows);
      const int64_t element_bytes = t->dtype == DType::kF32 ? 4 : 2;
      std::vector<float> values(size_t(outer * (rows / 2) * inner));
      for (int64_t e = 0; e < outer; ++e)
        for (int64_t r = 0; r < rows / 2; ++r)
          dequantize_row(t->dtype,
                         static_cast<const uint8_t*>(t->data) + ((e * rows + 2 * r + parity) * inner) * element_bytes,
                         values.data() + (e * (rows / 2) + r) * inner, inner);
      add_owned_f32(spec.gguf_name, values);
      std::vector<int64_t> dims(spec.shape.rbegin(), spec.shape.rend());
      dims[dims.size() - 2] = rows / 2;
      tensors_.tensors[spec.gguf_name].dims = dims;
      return Status::ok_status();
    }
    if (spec.rewrite == Rewrite::kQkvzToQkv || spec.rewrite == Rewrite::kQkvzToZ) {
      PAGODA_ASSIGN_OR_RETURN(const format::SafetensorsTensor* t, find(spec.hf_name, spec));
      const int64_t rows = spec.shape[0], row_bytes = int64_t(t->size_bytes) / rows;
      const bool z = spec.rewrite == Rewrite::kQkvzToZ;
      owned_.push_back(split_qkvz_rows(static_cast<const uint8_t*>(t->data), row_bytes, c.delta_net_k_heads,
                                       c.delta_net_head_dim, c.delta_net_v_heads / c.delta_net_k_heads, z));
      const int64_t out_rows = z ? c.delta_net_value_dim() : c.delta_net_conv_dim();
      tensors_.tensors[spec.gguf_name] = TensorRef{t->dtype, std::string(format::safetensors_dtype_name(t->dtype)),
                                                   {spec.shape[1], out_rows}, owned_.back().data(), {}};
      order_.push_back(spec.gguf_name);
      return Status::ok_status();
    }
    if (spec.rewrite == Rewrite::kNegExpToF32) {
      PAGODA_ASSIGN_OR_RETURN(const format::SafetensorsTensor* t, find(spec.hf_name, spec));
      std::vector<float> values(static_cast<size_t>(t->num_elements()));
      dequantize_row(t->dtype, t->data, values.data(), t->num_elements());
      for (float& v : values) v = -std::exp(v);
      add_owned_f32(spec.gguf_name, values);
      tensors_.tensors[spec.gguf_name].dims.assign(spec.shape.rbegin(), spec.shape.rend());
      return Status::ok_status();
    }
    if (spec.rewrite >= Rewrite::kTileQkvVHeads && spec.rewrite <= Rewrite::kTileNegExpVHeads) {
      PAGODA_ASSIGN_OR_RETURN(const format::SafetensorsTensor* t, find(spec.hf_name, spec));
      const int64_t k_heads = c.delta_net_k_heads, v_heads = c.delta_net_v_heads;
      const int64_t qk_rows = 2 * k_heads * c.delta_net_head_dim;
      const auto* src = static_cast<const uint8_t*>(t->data);
      if (spec.rewrite == Rewrite::kTileConvVHeads || spec.rewrite == Rewrite::kTileNegExpVHeads) {
        const int64_t n = t->num_elements(), rows = spec.shape[0];
        std::vector<float> values(static_cast<size_t>(n));
        dequantize_row(t->dtype, src, values.data(), n);
        if (spec.rewrite == Rewrite::kTileNegExpVHeads)
          for (float& v : values) v = -std::exp(v);
        const bool conv = spec.rewrite == Rewrite::kTileConvVHeads;
        const std::vector<uint8_t> tiled =
            tile_v_head_rows(reinterpret_cast<const uint8_t*>(values.data()), rows, n / rows * 4, conv ? qk_rows : 0,
                             k_heads, v_heads);
        std::memcpy(values.data(), tiled.data(), tiled.size());
        add_owned_f32(spec.gguf_name, values);
        if (conv) tensors_.tensors[spec.gguf_name].dims = {spec.shape.back(), rows};
        return Status::ok_status();
      }
      r.dtype = t->dtype;
      r.type_name = std::string(format::safetensors_dtype_name(t->dtype));
      r.dims.assign(t->shape.rbegin(), t->shape.rend());
      const int64_t rows = spec.shape[0], row_bytes = int64_t(t->size_bytes) / rows;
      if (spec.rewrite == Rewrite::kTileVHeadCols) {
        const int64_t cols = spec.shape[1], element_bytes = row_bytes / cols;
        std::vector<uint8_t> out(t->size_bytes);
        for (int64_t i = 0; i < rows; ++i) {
          const std::vector<uint8_t> row = tile_v_head_rows(src + i * row_bytes, cols, element_bytes, 0, k_heads, v_heads);
          std::memcpy(out.data() + i * row_bytes, row.data(), row.size());
        }
        owned_.push_back(std::move(out));
      } else {
        owned_.push_back(tile_v_head_rows(src, rows, row_bytes, spec.rewrite == Rewrite::kTileQkvVHeads ? qk_rows : 0,
                                          k_heads, v_heads));
      }
      r.data = owned_.back().data();
    } else if (!spec.hf_slices.empty()) {
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
  if (family->model_tensors != nullptr) {
    std::vector<HfTensor> extra;
    family->model_tensors(hf_, extra);
    for (const HfTensor& spec : extra) PAGODA_RETURN_IF_ERROR(add(spec));
  }
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
