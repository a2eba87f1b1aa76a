// Random-weight HF folders.
#include "synth/hf_random_model_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "format/gguf_names.h"
#include "format/safetensors_writer.h"
#include "loader/hf_folder_metadata.h"
#include "model/architecture.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"
#include "model/hf_gguf.h"
#include "synth/random_model_writer.h"

namespace pagoda::synth {
namespace {

namespace fs = std::filesystem;

// The shape's config.json (common fields, then the family's own from hf_extra_json), read back as pagoda reads
// any folder's: the family fills in what the fields imply.
Result<HfConfig> hf_config_of(const ModelShape& s) {
  nlohmann::ordered_json j;
  j["architectures"] = {s.hf_architecture};
  j["hidden_size"] = s.dim;
  j["intermediate_size"] = s.hidden_dim;
  j["num_hidden_layers"] = s.num_layers;
  j["num_attention_heads"] = s.num_heads;
  j["num_key_value_heads"] = s.num_kv_heads;
  j["head_dim"] = s.head_size();
  j["vocab_size"] = s.vocab_size;
  j["max_position_embeddings"] = s.context_length;
  j["rms_norm_eps"] = s.rms_eps;
  j["rope_theta"] = s.rope_theta;
  j["tie_word_embeddings"] = s.tied_embeddings;
  if (s.bos_token_id < s.vocab_size) j["bos_token_id"] = s.bos_token_id;
  if (s.eos_token_id < s.vocab_size) j["eos_token_id"] = s.eos_token_id;
  if (s.llama3_rope_factor > 0)
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", s.llama3_rope_factor},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  if (s.yarn_factor > 0)
    j["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", s.yarn_factor},
                         {"original_max_position_embeddings", s.yarn_original_context},
                         {"beta_fast", 32.0},
                         {"beta_slow", 1.0}};
  if (s.kv_shared_layers > 0) j["num_kv_shared_layers"] = s.kv_shared_layers;
  if (!s.hf_extra_json.empty()) j.update(nlohmann::ordered_json::parse(s.hf_extra_json));
  return parse_hf_config(j.dump(), "shape " + s.name);
}

// sentence-transformers' description of an embedding model: the transformer, its pooling, then normalization, as
// Qwen3-Embedding publishes it (modules.json and 1_Pooling/config.json).
Status write_sentence_transformers_pooling(const std::string& dir, const ModelShape& s) {
  if (s.embedding_pooling != "lasttoken" && s.embedding_pooling != "mean" && s.embedding_pooling != "cls")
    return make_error(fmt::format("shape {}: unknown embedding pooling '{}'", s.name, s.embedding_pooling));
  const nlohmann::ordered_json modules = {
      {{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}},
      {{"idx", 1}, {"name", "1"}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}},
      {{"idx", 2}, {"name", "2"}, {"path", "2_Normalize"}, {"type", "sentence_transformers.models.Normalize"}}};
  const nlohmann::ordered_json pooling = {{"word_embedding_dimension", s.dim},
                                          {"pooling_mode_cls_token", s.embedding_pooling == "cls"},
                                          {"pooling_mode_mean_tokens", s.embedding_pooling == "mean"},
                                          {"pooling_mode_max_tokens", false},
                                          {"pooling_mode_mean_sqrt_len_tokens", false},
                                          {"pooling_mode_weightedmean_tokens", false},
                                          {"pooling_mode_lasttoken", s.embedding_pooling == "lasttoken"},
                                          {"include_prompt", true}};
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "1_Pooling", ec);
  if (ec) return make_error(fmt::format("cannot create {}/1_Pooling: {}", dir, ec.message()));
  for (const auto& [path, j] : {std::pair{fs::path(dir) / "modules.json", &modules},
                                std::pair{fs::path(dir) / "1_Pooling" / "config.json", &pooling}}) {
    std::ofstream out(path);
    out << j->dump(2) << "\n";
    if (!out) return make_error(fmt::format("cannot write {}", path.string()));
  }
  return Status::ok_status();
}

Status write_folder(const RandomHfModelOptions& o, const std::string& dir) {
  const ModelShape& s = o.shape;
  if (s.hf_architecture.empty()) return make_error(fmt::format("shape {} has no HF architecture", s.name));
  if (o.weight_type != DType::kF32 && o.weight_type != DType::kF16)
    return make_error("an HF folder's random weights are f32 or f16");
  PAGODA_ASSIGN_OR_RETURN(const HfConfig h, hf_config_of(s));
  const ModelConfig& c = h.config;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", dir, ec.message()));
  {
    std::string config_text = hf_config_json(h);
    if (!s.matryoshka_dimensions.empty()) {
      nlohmann::ordered_json j = nlohmann::ordered_json::parse(config_text);
      j["matryoshka_dimensions"] = s.matryoshka_dimensions;
      config_text = j.dump(2) + "\n";
    }
    std::ofstream out(fs::path(dir) / "config.json");
    out << config_text;
    if (!out) return make_error(fmt::format("cannot write {}/config.json", dir));
  }
  if (!s.embedding_pooling.empty()) PAGODA_RETURN_IF_ERROR(write_sentence_transformers_pooling(dir, s));
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

  // The family's tensors in llama.cpp's order, each expert of a stacked tensor as a tensor of its own.
  using Kind = HfTensor::Kind;
  struct Spec {
    std::string name;
    std::vector<int64_t> shape;
    Kind kind;
  };
  std::vector<Spec> specs;
  specs.push_back({"model.embed_tokens.weight", {c.vocab_size, c.dim}, Kind::kMatrix});
  const HfFamily* family = find_hf_family(h.hf_architecture);
  if (family->model_tensors != nullptr) {
    std::vector<HfTensor> extra;
    family->model_tensors(h, extra);
    for (const HfTensor& t : extra) specs.push_back({t.hf_name, t.shape, t.kind});
  }
  std::vector<HfTensor> layer;
  for (int32_t l = 0; l < c.num_layers; ++l) {
    layer.clear();
    family->layer_tensors(h, l, layer);
    for (const HfTensor& t : layer) {
      // gpt-oss's gate and up come from one interleaved tensor: written once.
      const bool seen = std::any_of(specs.begin(), specs.end(), [&t](const Spec& s) { return s.name == t.hf_name; });
      if (t.hf_slices.empty() && !seen) specs.push_back({t.hf_name, t.shape, t.kind});
      for (const std::string& slice : t.hf_slices) specs.push_back({slice, t.shape, t.kind});
    }
  }
  specs.push_back(
      {c.output_norm_is_token_embd_norm ? "model.embedding_norm.weight" : "model.norm.weight", {c.dim}, Kind::kNorm});
  if (!h.tie_word_embeddings) specs.push_back({"lm_head.weight", {c.vocab_size, c.dim}, Kind::kMatrix});
  // Qwen3-Embedding's checkpoints name the backbone's tensors without the "model." prefix.
  if (!s.embedding_pooling.empty())
    for (Spec& spec : specs)
      if (spec.name.starts_with("model.")) spec.name.erase(0, 6);

  format::SafetensorsWriter w;
  w.set_metadata("format", "pt");
  const int32_t num_tensors = int32_t(specs.size());
  for (int32_t i = 0; i < num_tensors; ++i) {
    const Spec& spec = specs[size_t(i)];
    const DType dtype = spec.kind == Kind::kMatrix ? o.weight_type : DType::kF32;
    const uint64_t seed = o.seed * 0x100000001B3ull + uint64_t(i);
    const bool norm_plus_one = h.norms_plus_one;
    if (spec.kind == Kind::kMxfp4) {
      // MXFP4 experts: random nibbles, and exponents 2^-8 .. 2^-7 so that the values (at most 6 times that) are about
      // as large as the float matrices' (std 0.02).
      std::vector<int64_t> blocks_shape = spec.shape, scales_shape = spec.shape;
      blocks_shape.back() /= 32;
      blocks_shape.push_back(16);
      scales_shape.back() /= 32;
      w.add_byte_tensor(spec.name + "_blocks", blocks_shape, [seed](std::span<uint8_t> dst) {
        fill_random_bytes(dst, seed);
      });
      w.add_byte_tensor(spec.name + "_scales", scales_shape, [&o, spec, seed, i, num_tensors](std::span<uint8_t> dst) {
        fill_random_bytes(dst, seed ^ 0x5CA1E5u);
        for (uint8_t& e : dst) e = uint8_t(119 + (e & 1));
        if (o.on_tensor) o.on_tensor(i + 1, num_tensors, spec.name);
      });
      continue;
    }
    w.add_tensor(
        spec.name, dtype, spec.shape, [&o, spec, dtype, seed, i, num_tensors, norm_plus_one](std::span<uint8_t> dst) {
          if (spec.kind == Kind::kNorm) {
            // Scales in [0.5, 1.5) (stored as the scale minus one where the family's norm adds one), random so that a
            // norm applied in the wrong place shows.
            fill_random_weights(dst, format::GgmlType::kF32, seed);
            float* v = reinterpret_cast<float*>(dst.data());
            for (size_t k = 0; k < dst.size() / 4; ++k)
              v[k] = v[k] / 0.034641016f * 0.5f + (norm_plus_one ? 0.0f : 1.0f);
          } else {
            fill_random_weights(dst, dtype == DType::kF16 ? format::GgmlType::kF16 : format::GgmlType::kF32, seed);
          }
          if (o.on_tensor) o.on_tensor(i + 1, num_tensors, spec.name);
        });
  }
  return w.write((fs::path(dir) / "model.safetensors").string());
}

// Qwen3-Reranker's prompt, as llama.cpp's converter writes it into tokenizer.chat_template.rerank.
constexpr const char* kQwen3RerankTemplate =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: Given "
    "a web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: "
    "{document}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

// The folder's GGUF with what llama.cpp's converter adds for a Qwen3-Reranker: rank pooling, the yes/no labels, the
// rerank template and the head cls.output.weight [dim, 2] (random rows in the matrices' type).
Status write_decoder_reranker_gguf(const RandomHfModelOptions& o, const HfCheckpoint& ckpt, const std::string& name) {
  const ModelShape& s = o.shape;
  if (s.hf_architecture != "Qwen3ForCausalLM")
    return make_error(fmt::format("shape {}: a decoder reranker is a qwen3 model, not {}", s.name, s.hf_architecture));
  PAGODA_ASSIGN_OR_RETURN(HfFolderMetadata m, hf_folder_metadata(ckpt, name));
  const std::string arch = ckpt.config().architecture;
  m.writer.set(format::gguf_key::arch_key(arch, format::gguf_key::kPoolingType), format::GgufValue::u32(4));
  m.writer.set(format::gguf_key::arch_key(arch, format::gguf_key::kClassifierOutputLabels),
               format::GgufValue::string_array({"yes", "no"}));
  m.writer.set(format::gguf_key::kRerankTemplate, format::GgufValue::string(kQwen3RerankTemplate));
  m.writer.set(format::gguf_key::kChatTemplateNames, format::GgufValue::string_array({"rerank"}));
  const format::GgmlType type = o.weight_type == DType::kF16 ? format::GgmlType::kF16 : format::GgmlType::kF32;
  const uint64_t bytes = uint64_t(2) * uint64_t(s.dim) * (type == format::GgmlType::kF16 ? 2 : 4);
  const uint64_t seed = o.seed * 0x100000001B3ull + 0xC1A55u;
  m.writer.add_tensor_generated(std::string(format::gguf_tensor::kClassifierOutputStem) + ".weight", type,
                                {s.dim, 2}, bytes,
                                [type, seed](std::span<uint8_t> dst) { fill_random_weights(dst, type, seed); });
  return write_hf_gguf(ckpt, m.writer, o.output_path);
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
      const std::string name = fmt::format("{} (random weights, seed {})", o.shape.name, o.seed);
      if (o.shape.decoder_reranker) {
        st = write_decoder_reranker_gguf(o, **ckpt, name);
      } else {
        Result<std::string> r = convert_hf_folder(**ckpt, o.output_path, name);
        if (!r.ok()) st = r.status();
      }
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return st;
}

}  // namespace pagoda::synth
