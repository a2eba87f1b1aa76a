// The smollm3 family (SmolLM3): Llama's block (adjacent-pair RoPE on permuted Q/K rows, GQA, tied embeddings) with
// NoPE layers: every 4th layer (3, 7, ...) runs attention without RoPE. llama.cpp fixes that period for the
// architecture (no GGUF key); config.json lists it per layer as no_rope_layers (1 = RoPE), which must be that
// pattern.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/hf_config_fields.h"

namespace pagoda {
namespace {

constexpr int32_t kNoRopePeriod = 4;  // llama.cpp's n_no_rope_layer_step for smollm3

std::vector<uint8_t> no_rope_pattern(int32_t num_layers) {
  std::vector<uint8_t> skips(static_cast<size_t>(num_layers));
  for (int32_t l = 0; l < num_layers; ++l) skips[size_t(l)] = (l + 1) % kNoRopePeriod == 0;
  return skips;
}

Status read_smollm3_gguf(const format::GgufFile&, ModelConfig& c) {
  c.layer_skips_rope = no_rope_pattern(c.num_layers);
  return Status::ok_status();
}

Status read_smollm3_config(const HfConfigFields& f, HfConfig& h) {
  ModelConfig& c = h.config;
  c.layer_skips_rope = no_rope_pattern(c.num_layers);
  PAGODA_ASSIGN_OR_RETURN(bool use_sliding, f.bool_or("use_sliding_window", false));
  if (use_sliding) return f.error("use_sliding_window: true is not supported for SmolLM3ForCausalLM");
  if (f.has("no_rope_layers")) {
    const nlohmann::json& list = f.json()["no_rope_layers"];
    bool matches = list.is_array() && list.size() == size_t(c.num_layers);
    for (size_t l = 0; matches && l < list.size(); ++l)
      matches = list[l].is_number_integer() && list[l].get<int64_t>() == (c.layer_skips_rope[l] ? 0 : 1);
    if (!matches)
      return f.error(fmt::format("no_rope_layers must be 1 for each RoPE layer and 0 for every {}th (layers {}, {}, "
                                 "...), as llama.cpp's smollm3 runs",
                                 kNoRopePeriod, kNoRopePeriod - 1, 2 * kNoRopePeriod - 1));
  }
  return Status::ok_status();
}

void write_smollm3_config(const HfConfig& h, nlohmann::ordered_json& j) {
  j["model_type"] = "smollm3";
  j["no_rope_layer_interval"] = kNoRopePeriod;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (uint8_t skip : h.config.layer_skips_rope) list.push_back(skip ? 0 : 1);
  j["no_rope_layers"] = list;
  j["use_sliding_window"] = false;
}

void smollm3_layer_tensors(const HfConfig& h, int32_t layer, std::vector<HfTensor>& out) {
  append_hf_attention_tensors(h, layer, out);
  append_hf_dense_ffn_tensors(h, layer, out);
}

}  // namespace

extern const ArchitectureFamily kSmolLm3Family{"smollm3", false, read_smollm3_gguf, nullptr};
extern const HfFamily kSmolLm3Hf{"SmolLM3ForCausalLM", "smollm3", "", read_smollm3_config, write_smollm3_config,
                                 smollm3_layer_tensors};

}  // namespace pagoda
