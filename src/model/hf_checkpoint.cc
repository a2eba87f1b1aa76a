// Maps HF tensor names to GGUF names, checking each shape against config.json.
#include "model/hf_checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

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
  enum class Rewrite { kNone, kPermuteQ, kPermuteK };
  // Adds HF tensor `hf_name` as `gguf_name`, checking its shape (PyTorch order) against config.json.
  auto add = [&](const std::string& hf_name, const std::string& gguf_name, std::vector<int64_t> shape,
                 const char* fields, Rewrite rewrite = Rewrite::kNone) -> Status {
    const format::SafetensorsTensor* t = safetensors_->find(hf_name);
    if (t == nullptr)
      return make_error(
          fmt::format("{}: missing tensor {} (needed by {})", safetensors_->describe(), hf_name, hf_.hf_architecture));
    if (t->shape != shape)
      return make_error(fmt::format("{}: {} has shape {} but {} gives {} ({})", *t->file, hf_name,
                                    shape_string(t->shape), config_path, shape_string(shape), fields));
    TensorRef r;
    r.dtype = t->dtype;
    r.type_name = std::string(format::safetensors_dtype_name(t->dtype));
    r.dims.assign(t->shape.rbegin(), t->shape.rend());
    r.data = t->data;
    if (rewrite != Rewrite::kNone) {
      const int64_t row_bytes = int64_t(t->size_bytes) / shape[0];
      owned_.push_back(permute_rows_for_adjacent_rope(static_cast<const uint8_t*>(t->data), shape[0], row_bytes,
                                                      rewrite == Rewrite::kPermuteQ ? c.num_heads : c.num_kv_heads));
      r.data = owned_.back().data();
    }
    tensors_.tensors[gguf_name] = std::move(r);
    order_.push_back(gguf_name);
    return Status::ok_status();
  };
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim, vocab = c.vocab_size;
  PAGODA_RETURN_IF_ERROR(
      add("model.embed_tokens.weight", "token_embd.weight", {vocab, dim}, "vocab_size, hidden_size"));
  if (!c.rope_freq_factors.empty()) {
    std::vector<uint8_t> bytes(c.rope_freq_factors.size() * sizeof(float));
    std::memcpy(bytes.data(), c.rope_freq_factors.data(), bytes.size());
    owned_.push_back(std::move(bytes));
    tensors_.tensors["rope_freqs.weight"] =
        TensorRef{DType::kF32, "F32", {int64_t(c.rope_freq_factors.size())}, owned_.back().data()};
    order_.push_back("rope_freqs.weight");
  }
  const Rewrite rq = hf_.permute_qk ? Rewrite::kPermuteQ : Rewrite::kNone;
  const Rewrite rk = hf_.permute_qk ? Rewrite::kPermuteK : Rewrite::kNone;
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const std::string h = fmt::format("model.layers.{}.", l), g = fmt::format("blk.{}.", l);
    PAGODA_RETURN_IF_ERROR(add(h + "input_layernorm.weight", g + "attn_norm.weight", {dim}, "hidden_size"));
    PAGODA_RETURN_IF_ERROR(add(h + "self_attn.q_proj.weight", g + "attn_q.weight", {q_dim, dim},
                               "num_attention_heads * head_dim, hidden_size", rq));
    PAGODA_RETURN_IF_ERROR(add(h + "self_attn.k_proj.weight", g + "attn_k.weight", {kv_dim, dim},
                               "num_key_value_heads * head_dim, hidden_size", rk));
    PAGODA_RETURN_IF_ERROR(add(h + "self_attn.v_proj.weight", g + "attn_v.weight", {kv_dim, dim},
                               "num_key_value_heads * head_dim, hidden_size"));
    if (hf_.qkv_bias) {
      PAGODA_RETURN_IF_ERROR(
          add(h + "self_attn.q_proj.bias", g + "attn_q.bias", {q_dim}, "num_attention_heads * head_dim", rq));
      PAGODA_RETURN_IF_ERROR(
          add(h + "self_attn.k_proj.bias", g + "attn_k.bias", {kv_dim}, "num_key_value_heads * head_dim", rk));
      PAGODA_RETURN_IF_ERROR(
          add(h + "self_attn.v_proj.bias", g + "attn_v.bias", {kv_dim}, "num_key_value_heads * head_dim"));
    }
    if (hf_.qk_norm) {
      PAGODA_RETURN_IF_ERROR(add(h + "self_attn.q_norm.weight", g + "attn_q_norm.weight", {c.head_dim}, "head_dim"));
      PAGODA_RETURN_IF_ERROR(add(h + "self_attn.k_norm.weight", g + "attn_k_norm.weight", {c.head_dim}, "head_dim"));
    }
    PAGODA_RETURN_IF_ERROR(add(h + "self_attn.o_proj.weight", g + "attn_output.weight", {dim, q_dim},
                               "hidden_size, num_attention_heads * head_dim"));
    PAGODA_RETURN_IF_ERROR(add(h + "post_attention_layernorm.weight", g + "ffn_norm.weight", {dim}, "hidden_size"));
    PAGODA_RETURN_IF_ERROR(
        add(h + "mlp.gate_proj.weight", g + "ffn_gate.weight", {hidden, dim}, "intermediate_size, hidden_size"));
    PAGODA_RETURN_IF_ERROR(
        add(h + "mlp.up_proj.weight", g + "ffn_up.weight", {hidden, dim}, "intermediate_size, hidden_size"));
    PAGODA_RETURN_IF_ERROR(
        add(h + "mlp.down_proj.weight", g + "ffn_down.weight", {dim, hidden}, "hidden_size, intermediate_size"));
  }
  PAGODA_RETURN_IF_ERROR(add("model.norm.weight", "output_norm.weight", {dim}, "hidden_size"));
  // Tied embeddings: no output.weight, as llama.cpp writes them (a stored lm_head copy is ignored).
  if (!hf_.tie_word_embeddings)
    PAGODA_RETURN_IF_ERROR(add("lm_head.weight", "output.weight", {vocab, dim}, "vocab_size, hidden_size"));
  return Status::ok_status();
}

}  // namespace pagoda
