// The llama family: Llama, Mistral (with its sliding window) and Mixtral (experts), all general.architecture
// "llama". Keys: llama.attention.sliding_window (Mistral's window: written by pagoda's converter; llama.cpp's
// llama ignores it and runs full attention), llama.expert_count / expert_used_count (Mixtral; llama.cpp
// renormalizes the chosen experts' softmax weights to sum 1, as Mixtral does).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

using Limits = ModelConfigLimits;

Status read_llama_gguf(const format::GgufFile& file, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> window, gguf_arch_u32(file, c, family_key::kSlidingWindow));
  if (window && *window > uint32_t(Limits::kMaxContextLength))
    return make_error(
        fmt::format("{}: {}.attention.sliding_window = {} is out of range", file.name(), c.architecture, *window));
  if (window) c.sliding_window = int32_t(*window);  // every layer windowed (layer_is_swa empty)
  PAGODA_RETURN_IF_ERROR(read_gguf_experts(file, c));
  c.expert_weights_norm = c.num_experts > 0;
  return Status::ok_status();
}

void write_llama_gguf(const ModelConfig& c, format::GgufWriter& w) {
  if (c.sliding_window > 0)
    w.set(arch_key(c, family_key::kSlidingWindow), format::GgufValue::u32(uint32_t(c.sliding_window)));
  write_gguf_experts(c, w);
}

// Mistral's window applies to every layer when use_sliding_window (default true) and sliding_window is set.
Status read_sliding_window(const HfConfigFields& f, HfConfig& h, bool default_use) {
  if (!f.has("sliding_window")) return Status::ok_status();
  PAGODA_ASSIGN_OR_RETURN(bool use_sliding, f.bool_or("use_sliding_window", default_use));
  PAGODA_ASSIGN_OR_RETURN(int32_t window, f.positive_int("sliding_window", Limits::kMaxContextLength));
  if (use_sliding) h.config.sliding_window = window;
  return Status::ok_status();
}

Status read_mistral_config(const HfConfigFields& f, HfConfig& h) { return read_sliding_window(f, h, true); }

void write_mistral_config(const HfConfig& h, nlohmann::ordered_json& j) {
  j["model_type"] = "mistral";
  if (h.config.sliding_window > 0) j["sliding_window"] = h.config.sliding_window;
}

Status read_mixtral_config(const HfConfigFields& f, HfConfig& h) {
  PAGODA_RETURN_IF_ERROR(read_sliding_window(f, h, true));
  ModelConfig& c = h.config;
  PAGODA_ASSIGN_OR_RETURN(c.num_experts, f.positive_int("num_local_experts", Limits::kMaxExperts));
  PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, f.positive_int("num_experts_per_tok", c.num_experts));
  c.expert_hidden_dim = c.hidden_dim;  // Mixtral's intermediate_size is each expert's
  c.expert_weights_norm = true;
  return Status::ok_status();
}

void write_mixtral_config(const HfConfig& h, nlohmann::ordered_json& j) {
  j["model_type"] = "mixtral";
  j["num_local_experts"] = h.config.num_experts;
  j["num_experts_per_tok"] = h.config.num_experts_used;
  j["sliding_window"] = h.config.sliding_window > 0 ? nlohmann::ordered_json(h.config.sliding_window) : nullptr;
}

void llama_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  append_hf_attention_tensors(h, layer, out);
  append_hf_dense_ffn_tensors(h, layer, out);
}

void mixtral_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  append_hf_attention_tensors(h, layer, out);
  append_hf_moe_tensors(h, layer, "block_sparse_moe.gate.weight", "block_sparse_moe.experts.{expert}.{proj}.weight",
                        "w1", "w3", "w2", out);
}

}  // namespace

extern const ArchitectureFamily kLlamaFamily{"llama", false, read_llama_gguf, write_llama_gguf};

extern const HfFamily kLlamaHf{"LlamaForCausalLM", "llama", "", nullptr, nullptr, llama_layer_tensors};
extern const HfFamily kMistralHf{"MistralForCausalLM", "llama", "", read_mistral_config, write_mistral_config,
                                 llama_layer_tensors};
extern const HfFamily kMixtralHf{"MixtralForCausalLM", "llama", "", read_mixtral_config, write_mixtral_config,
                                 mixtral_layer_tensors};

}  // namespace pagoda
