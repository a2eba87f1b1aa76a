// ArchitectureFamily: one architecture pagoda runs, under its GGUF general.architecture name, and what differs
// from the common Llama block: the family's own GGUF keys (family_key below, or its arch_*.cc; read into ModelConfig,
// and written back the same way by the HF converter). HfFamily: a Hugging Face `architectures[0]` of a family: its
// config.json fields and its tensor names. The families are defined one file each (arch_llama.cc, arch_qwen.cc,
// arch_gemma.cc, arch_gemma4.cc, arch_phi3.cc, arch_granite.cc, arch_smollm3.cc, arch_olmo2.cc, arch_mistral3.cc,
// arch_exaone4.cc, arch_lfm2.cc, arch_gpt_oss.cc, arch_qwen35.cc, arch_qwen3next.cc, arch_deepseek2.cc, arch_bert.cc,
// arch_jina_bert_v2.cc, arch_nomic_bert.cc); architecture.cc lists them. A mixture of experts, with or without a shared expert, is a
// property of a family's layers that these helpers read and write alike for any family. Plain data and functions; no
// state.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "format/gguf_names.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "model/model_config.h"

namespace pagoda {

struct HfConfig;
class HfConfigFields;

// The GGUF keys under "<arch>." that several families read (llama.cpp's names). The keys every architecture has are
// format/gguf_names.h's; a key only one family has is named in its arch_*.cc.
namespace family_key {
inline constexpr const char* kSlidingWindow = "attention.sliding_window";
inline constexpr const char* kSlidingWindowPattern = "attention.sliding_window_pattern";  // u32 period or bool array
inline constexpr const char* kAttentionScale = "attention.scale";  // the score scale, instead of 1 / sqrt(head_dim)
inline constexpr const char* kExpertCount = "expert_count";
inline constexpr const char* kExpertUsedCount = "expert_used_count";
inline constexpr const char* kExpertFeedForwardLength = "expert_feed_forward_length";
inline constexpr const char* kExpertWeightsScale = "expert_weights_scale";
inline constexpr const char* kExpertSharedFeedForwardLength = "expert_shared_feed_forward_length";
}  // namespace family_key
// "<c.architecture>.<suffix>": format::gguf_key::arch_key for a model's own architecture.
inline std::string arch_key(const ModelConfig& c, const char* suffix) {
  return format::gguf_key::arch_key(c.architecture, suffix);
}
namespace gguf_key = format::gguf_key;

struct ArchitectureFamily {
  std::string_view gguf_name;  // "gemma2"
  bool rope_neox = false;      // llama.cpp's rope type for it: NeoX halves, else adjacent pairs
  // Reads the family's own keys ("gemma2.attn_logit_softcapping", ...) into `config`, whose common fields
  // (embedding_length, heads, rope base, ...) are read already. Errors name the key.
  Status (*read_gguf)(const format::GgufFile& file, ModelConfig& config) = nullptr;
  // Writes those keys for `config`, as llama.cpp's converter names them (the inverse of read_gguf).
  void (*write_gguf)(const ModelConfig& config, format::GgufWriter& writer) = nullptr;
};

// One tensor of an HF checkpoint and its GGUF name. `shape` is PyTorch's order (of each slice, for stacked
// experts); `fields` names the config.json fields it comes from, for errors.
struct HfTensor {
  // kMxfp4: stacked experts stored as OpenAI's MXFP4, hf_name + "_blocks" (U8 [shape..., cols / 32, 16]: nibbles
  // of values 2i and 2i + 1 in byte i) and hf_name + "_scales" (U8 [shape..., cols / 32]: e8m0 exponents), made
  // into ggml's MXFP4 blocks (the exponent, then value i and i + 16 in byte i) as llama.cpp's converter repacks them.
  enum class Kind : uint8_t { kMatrix, kNorm, kBias, kMxfp4 };
  // How the GGUF tensor is made from the HF one(s).
  enum class Rewrite : uint8_t {
    kNone,
    kPermuteQ,  // rows permuted for adjacent-pair RoPE (llama.cpp's LlamaModel.permute), num_heads heads
    kPermuteK,  // the same over num_kv_heads heads
    kAddOne,    // w + 1: Gemma's RMSNorm scales by (1 + w); GGUF stores the sum
    kToF32,     // stored as f32 whatever the checkpoint's type (llama.cpp's converter keeps the gate vectors f32)
    kSqueezeToF32,  // the same, without its unit dimensions (LFM2's depthwise conv taps [dim, 1, L] -> [L, dim])
    // gpt-oss's gate_up_proj holds gate and up interleaved along shape[1]: its even entries (gate) or its odd ones
    // (up), shape[1] / 2 of them; a bias is stored f32.
    kEvenRows,
    kOddRows,
    // Qwen3.5's DeltaNet value heads from grouped by key head to llama.cpp's tiled order (arch_qwen35.cc): the rows
    // of the V part of in_proj_qkv (after the Q and K rows), every row (in_proj_z, in_proj_a/b, dt_bias), the
    // columns (out_proj), the V channels of conv1d ([C, 1, L] -> f32 [L, C]), and A_log as f32 -exp(A_log).
    kTileQkvVHeads,
    kTileVHeadRows,
    kTileVHeadCols,
    kTileConvVHeads,
    kTileNegExpVHeads,
    // Qwen3-Next's in_proj_qkvz, per key head its q, k, v (its value heads') and z rows, split as llama.cpp's
    // converter splits it: attn_qkv (every key head's q, then every k, then every v) or attn_gate (every z); and
    // A_log as f32 -exp(A_log), its heads in place.
    kQkvzToQkv,
    kQkvzToZ,
    kNegExpToF32,
  };
  std::string hf_name;                 // empty when hf_slices is used
  std::vector<std::string> hf_slices;  // stacked: one HF tensor per expert, GGUF dims gain num_experts outermost
  std::string gguf_name;
  std::vector<int64_t> shape;
  const char* fields = "";
  Kind kind = Kind::kMatrix;
  Rewrite rewrite = Rewrite::kNone;
};

struct HfFamily {
  std::string_view hf_architecture;    // "Gemma2ForCausalLM"
  std::string_view gguf_architecture;  // "gemma2"
  // rope_scaling types besides llama3 and default that read_config handles ("linear", "longrope su"); "" none.
  const char* rope_scaling_types = "";
  // The family's own config.json fields (the common sizes are read already); sets HfConfig's layout switches.
  Status (*read_config)(const HfConfigFields& fields, HfConfig& config) = nullptr;
  // Writes those fields for `config` into the config.json object (for gen-model's random folders).
  void (*write_config)(const HfConfig& config, nlohmann::ordered_json& json) = nullptr;
  // Every tensor of layer `layer`, in llama.cpp's order.
  void (*layer_tensors)(const HfConfig& config, int32_t layer, std::vector<HfTensor>& out) = nullptr;
  // The model's tensors besides the embeddings, final norm and classifier (Gemma 4's per-layer embeddings); null:
  // none.
  void (*model_tensors)(const HfConfig& config, std::vector<HfTensor>& out) = nullptr;
  // The architectures[0] of the family's checkpoints as published with a vision tower (Qwen3.5's
  // Qwen3_5ForConditionalGeneration): the text model's fields nested in text_config, its tensors under
  // "model.language_model.", the tower's (vision_config, "model.visual.") not loaded. Empty: none.
  std::string_view multimodal_architecture = "";
};

// The family of a GGUF architecture name, or nullptr.
const ArchitectureFamily* find_architecture(std::string_view gguf_name);
// The family of an HF architectures[0], or nullptr.
const HfFamily* find_hf_family(std::string_view hf_architecture);
// The family whose multimodal checkpoints carry this architectures[0], or nullptr.
const HfFamily* find_multimodal_hf_family(std::string_view hf_architecture);
// "llama, qwen2, ..." and "LlamaForCausalLM, ..." for error messages.
std::string supported_architecture_names();
std::string supported_hf_architecture_names();

// The tensors of an HF Llama-style layer that families share (llama.cpp names), appended to `out`.
// Attention: input_layernorm, q/k/v/o_proj (Q/K rows permuted when config.permute_qk), QKV bias and Q/K norms when
// the config has them. Dense FFN: post_attention_layernorm as ffn_norm, and gate/up/down_proj.
void append_hf_attention_tensors(const HfConfig& config, int32_t layer, std::vector<HfTensor>& out);
void append_hf_dense_ffn_tensors(const HfConfig& config, int32_t layer, std::vector<HfTensor>& out);
// An MoE FFN: `router` ([num_experts, hidden_size]) and experts e = 0.. named by `expert_format` with {layer},
// {expert} and {proj} for each of `gate`, `up`, `down` (e.g. Mixtral's w1, w3, w2).
void append_hf_moe_tensors(const HfConfig& config, int32_t layer, const std::string& router,
                           const std::string& expert_format, const char* gate, const char* up, const char* down,
                           std::vector<HfTensor>& out);
// An MoE layer's shared expert (config.shared_expert_hidden_dim units): `expert_format` with {layer} and {proj} for
// each of `gate`, `up`, `down` (e.g. "mlp.shared_expert.{proj}.weight"), and when config.shared_expert_gated its
// gate vector `gate_vector` ([1, hidden_size], e.g. "mlp.shared_expert_gate.weight"; GGUF [hidden_size, 1], f32).
void append_hf_shared_expert_tensors(const HfConfig& config, int32_t layer, const std::string& expert_format,
                                     const char* gate, const char* up, const char* down, const std::string& gate_vector,
                                     std::vector<HfTensor>& out);

// GGUF helpers for the families' key readers: an optional f32 / u32 under "<arch>.<suffix>".
Result<std::optional<float>> gguf_arch_f32(const format::GgufFile& file, const ModelConfig& c, const char* suffix);
Result<std::optional<uint32_t>> gguf_arch_u32(const format::GgufFile& file, const ModelConfig& c, const char* suffix);
// llama.cpp's sliding-window pattern: "<arch>.attention.sliding_window_pattern" as a u32 period (the last layer
// of each period is full attention) or a per-layer bool array; `default_period` when absent.
Status read_gguf_swa_pattern(const format::GgufFile& file, int32_t default_period, ModelConfig& config);
// The inverse: nothing when layer_is_swa is the default period's pattern, else the per-layer array.
void write_gguf_swa_pattern(const ModelConfig& config, int32_t default_period, format::GgufWriter& writer);
// The per-layer array always (the families whose llama.cpp converter writes it whatever the pattern); every layer
// windowed when layer_is_swa is empty.
void write_gguf_swa_layers(const ModelConfig& config, format::GgufWriter& writer);
// config.json's layer_types ("sliding_attention" / "full_attention", one per layer) into layer_is_swa.
Status read_hf_layer_types(const HfConfigFields& fields, ModelConfig& config);
// layer_is_swa for a period (llama.cpp's set_swa_pattern: layer l is windowed unless l % period == period - 1).
std::vector<uint8_t> swa_pattern_of_period(int32_t num_layers, int32_t period);
// The encoder families' common keys (arch_bert.cc; jina-bert-v2 and nomic-bert share them): the LayerNorm epsilon
// (into rms_eps), attention.causal (absent or false), the token-type count; sets ModelConfig::encoder.
Status read_gguf_encoder(const format::GgufFile& file, ModelConfig& config);
void write_gguf_encoder(const ModelConfig& config, format::GgufWriter& writer);
// The gated DeltaNet hybrids' common keys (arch_qwen35.cc; Qwen3.5 and Qwen3-Next share them): ssm.conv_kernel,
// ssm.state_size, ssm.group_count, ssm.time_step_rank, ssm.inner_size, the recurrent layers (full_attention_interval
// or attention.recurrent_layers); sets the gated attention and the pre-FFN norm under post_attention_norm.
Status read_gguf_gated_delta_net(const format::GgufFile& file, ModelConfig& config);
void write_gguf_gated_delta_net(const ModelConfig& config, format::GgufWriter& writer);
// Their config.json fields: linear_conv_kernel_dim, linear_{key,value}_head_dim, linear_num_{key,value}_heads,
// layer_types or full_attention_interval, partial_rotary_factor; norms stored as 1 + w.
Status read_hf_gated_delta_net(const HfConfigFields& fields, HfConfig& config);
// Their full-attention layers' HF tensors (self_attn's q_proj of query and gate, k/v/o_proj, q/k_norm as 1 + w) and
// their FFN's (dense, or experts with the gated shared expert; post_attention_layernorm as post_attention_norm).
void append_hf_gated_attention_tensors(const HfConfig& config, int32_t layer, std::vector<HfTensor>& out);
void append_hf_gated_hybrid_ffn_tensors(const HfConfig& config, int32_t layer, std::vector<HfTensor>& out);
// The MoE keys: expert_count, expert_used_count, expert_feed_forward_length (default: feed_forward_length).
Status read_gguf_experts(const format::GgufFile& file, ModelConfig& config);
void write_gguf_experts(const ModelConfig& config, format::GgufWriter& writer);
// The shared expert's width: expert_shared_feed_forward_length, `default_width` when absent (0: no shared expert
// unless the key is there). The inverse writes the key when the config has a shared expert.
Status read_gguf_shared_expert(const format::GgufFile& file, int32_t default_width, ModelConfig& config);
void write_gguf_shared_expert(const ModelConfig& config, format::GgufWriter& writer);

}  // namespace pagoda
