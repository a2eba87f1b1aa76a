// Random-weight HF folders.
#include "bench/hf_random_model_writer.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "bench/random_model_writer.h"
#include "loader/hf_folder_metadata.h"
#include "format/safetensors_writer.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"

namespace pagoda::bench {
namespace {

namespace fs = std::filesystem;

HfConfig hf_config_of(const ModelShape& s) {
  HfConfig h;
  h.hf_architecture = s.hf_architecture;
  ModelConfig& c = h.config;
  c.architecture = s.hf_architecture == "Qwen3ForCausalLM"   ? "qwen3"
                   : s.hf_architecture == "Qwen2ForCausalLM" ? "qwen2"
                                                             : "llama";
  c.dim = s.dim;
  c.hidden_dim = s.hidden_dim;
  c.num_layers = s.num_layers;
  c.num_heads = s.num_heads;
  c.num_kv_heads = s.num_kv_heads;
  c.head_dim = s.head_size();
  c.vocab_size = s.vocab_size;
  c.rms_eps = s.rms_eps;
  c.rope_theta = s.rope_theta;
  h.max_position_embeddings = s.context_length;
  h.tie_word_embeddings = s.tied_embeddings;
  h.qkv_bias = s.hf_architecture == "Qwen2ForCausalLM";
  h.qk_norm = s.hf_architecture == "Qwen3ForCausalLM";
  h.bos_token_id = s.bos_token_id < s.vocab_size ? s.bos_token_id : -1;
  h.eos_token_id = s.eos_token_id < s.vocab_size ? s.eos_token_id : -1;
  if (s.llama3_rope_factor > 0) {
    h.rope_scaling_factor = s.llama3_rope_factor;
    h.low_freq_factor = 1.0;
    h.high_freq_factor = 4.0;
    h.original_max_position_embeddings = 8192;
  }
  return h;
}

Status write_folder(const RandomHfModelOptions& o, const std::string& dir) {
  const ModelShape& s = o.shape;
  if (s.hf_architecture.empty()) return make_error(fmt::format("shape {} has no HF architecture", s.name));
  if (o.weight_type != DType::kF32 && o.weight_type != DType::kF16)
    return make_error("an HF folder's random weights are f32 or f16");
  const HfConfig h = hf_config_of(s);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", dir, ec.message()));
  {
    std::ofstream out(fs::path(dir) / "config.json");
    out << hf_config_json(h);
    if (!out) return make_error(fmt::format("cannot write {}/config.json", dir));
  }
  if (!o.tokenizer_json.empty()) {
    fs::copy_file(o.tokenizer_json, fs::path(dir) / "tokenizer.json", fs::copy_options::overwrite_existing, ec);
    if (ec) return make_error(fmt::format("cannot copy {}: {}", o.tokenizer_json, ec.message()));
    // The tokenizer's companions (special-token roles, chat template, stop tokens) when they sit beside it.
    for (const char* companion : {"tokenizer_config.json", "generation_config.json", "chat_template.jinja"}) {
      const fs::path from = fs::path(o.tokenizer_json).parent_path() / companion;
      if (!fs::exists(from, ec)) continue;
      fs::copy_file(from, fs::path(dir) / companion, fs::copy_options::overwrite_existing, ec);
      if (ec) return make_error(fmt::format("cannot copy {}: {}", from.string(), ec.message()));
    }
  }

  const int64_t dim = s.dim, hd = s.head_size(), q_dim = hd * s.num_heads, kv_dim = hd * s.num_kv_heads;
  struct Spec {
    std::string name;
    std::vector<int64_t> shape;
    enum Kind { kMatrix, kNorm, kBias } kind;
  };
  std::vector<Spec> specs;
  specs.push_back({"model.embed_tokens.weight", {s.vocab_size, dim}, Spec::kMatrix});
  for (int32_t l = 0; l < s.num_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    specs.push_back({p + "input_layernorm.weight", {dim}, Spec::kNorm});
    specs.push_back({p + "self_attn.q_proj.weight", {q_dim, dim}, Spec::kMatrix});
    specs.push_back({p + "self_attn.k_proj.weight", {kv_dim, dim}, Spec::kMatrix});
    specs.push_back({p + "self_attn.v_proj.weight", {kv_dim, dim}, Spec::kMatrix});
    if (h.qkv_bias) {
      specs.push_back({p + "self_attn.q_proj.bias", {q_dim}, Spec::kBias});
      specs.push_back({p + "self_attn.k_proj.bias", {kv_dim}, Spec::kBias});
      specs.push_back({p + "self_attn.v_proj.bias", {kv_dim}, Spec::kBias});
    }
    if (h.qk_norm) {
      specs.push_back({p + "self_attn.q_norm.weight", {hd}, Spec::kNorm});
      specs.push_back({p + "self_attn.k_norm.weight", {hd}, Spec::kNorm});
    }
    specs.push_back({p + "self_attn.o_proj.weight", {dim, q_dim}, Spec::kMatrix});
    specs.push_back({p + "post_attention_layernorm.weight", {dim}, Spec::kNorm});
    specs.push_back({p + "mlp.gate_proj.weight", {s.hidden_dim, dim}, Spec::kMatrix});
    specs.push_back({p + "mlp.up_proj.weight", {s.hidden_dim, dim}, Spec::kMatrix});
    specs.push_back({p + "mlp.down_proj.weight", {dim, s.hidden_dim}, Spec::kMatrix});
  }
  specs.push_back({"model.norm.weight", {dim}, Spec::kNorm});
  if (!h.tie_word_embeddings) specs.push_back({"lm_head.weight", {s.vocab_size, dim}, Spec::kMatrix});

  format::SafetensorsWriter w;
  w.set_metadata("format", "pt");
  const int32_t num_tensors = int32_t(specs.size());
  for (int32_t i = 0; i < num_tensors; ++i) {
    const Spec& spec = specs[size_t(i)];
    const DType dtype = spec.kind == Spec::kMatrix ? o.weight_type : DType::kF32;
    const uint64_t seed = o.seed * 0x100000001B3ull + uint64_t(i);
    w.add_tensor(spec.name, dtype, spec.shape, [&o, spec, dtype, seed, i, num_tensors](std::span<uint8_t> dst) {
      if (spec.kind == Spec::kNorm) {
        const float one = 1.0f;
        for (size_t k = 0; k < dst.size() / 4; ++k) std::memcpy(dst.data() + 4 * k, &one, 4);
      } else {
        fill_random_weights(dst, dtype == DType::kF16 ? format::GgmlType::kF16 : format::GgmlType::kF32, seed);
      }
      if (o.on_tensor) o.on_tensor(i + 1, num_tensors, spec.name);
    });
  }
  return w.write((fs::path(dir) / "model.safetensors").string());
}

}  // namespace

Status write_random_hf_model(const RandomHfModelOptions& o) {
  if (!o.gguf) return write_folder(o, o.output_path);
  const std::string dir = o.output_path + ".hf-tmp";
  Status st = write_folder(o, dir);
  if (st.ok()) {
    Result<std::unique_ptr<HfCheckpoint>> ckpt = HfCheckpoint::open(dir);
    if (!ckpt.ok()) {
      st = ckpt.status();
    } else {
      Result<std::string> r =
          convert_hf_folder(**ckpt, o.output_path, fmt::format("{} (random weights, seed {})", o.shape.name, o.seed));
      if (!r.ok()) st = r.status();
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return st;
}

}  // namespace pagoda::bench
