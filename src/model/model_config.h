// ModelConfig: the hyper-parameters of a decoder-only transformer, read from GGUF `<arch>.*` metadata.
// A plain value; every field is validated (positive, divisible) by model_config_from_gguf.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "kv/kv_cache_view.h"

namespace pagoda {

// The FFN's gate activation: SwiGLU (Llama, Qwen, Phi-3, Granite, the MoE experts), GeGLU with GELU's tanh
// approximation (Gemma), or gpt-oss's clamped SwiGLU (ggml's swiglu_oai: gate clamped above at kSwigluOaiLimit, up to
// +-kSwigluOaiLimit, gate * sigmoid(kSwigluOaiAlpha * gate) * (up + 1)).
enum class FfnActivation : uint8_t { kSilu, kGeluTanh, kSwigluOai };
inline constexpr float kSwigluOaiAlpha = 1.702f;
inline constexpr float kSwigluOaiLimit = 7.0f;

// rope.scaling.type: none (never scaled), linear (positions times rope_freq_scale), yarn (model/rope_tables.h: per
// pair between interpolation and extrapolation, with a magnitude factor), longrope (Phi-3's factor sets).
// Names and the checks of these fields: model/rope_scaling.h.
enum class RopeScalingType : uint8_t { kNone, kLinear, kYarn, kLongRope };

struct ModelConfig {
  std::string architecture;  // general.architecture, e.g. "llama"
  std::string name;          // general.name, may be empty
  int32_t dim = 0;           // embedding_length
  int32_t hidden_dim = 0;    // feed_forward_length
  int32_t num_layers = 0;    // block_count
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;  // attention.key_length (Qwen3: 128 with dim 1024, 16 heads), default dim / num_heads
  int32_t rope_dim = 0;  // rope.dimension_count (rotated dims per head), default head_dim
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  // RoPE pairs: false = adjacent dims (2i, 2i+1) as in llama.cpp's llama GGUFs, whose Q/K rows the converter
  // permuted; true = halves (i, i + rope_dim/2), "NeoX" style, as Qwen2/Qwen3 (and un-permuted HF weights) use.
  bool rope_neox = false;
  // f32 [rope_dim / 2]: pair i's frequency is divided by factor i (Llama 3 "llama3" rope scaling; GGUF tensor
  // rope_freqs.weight). Empty: no scaling.
  std::vector<float> rope_freq_factors;

  // What the families add to the Llama block; every default is Llama's (the feature is off).
  FfnActivation activation = FfnActivation::kSilu;
  float embedding_scale = 0.0f;  // 0: none; the embedding rows are multiplied by it (Gemma sqrt(dim), Granite)
  float attention_scale = 0.0f;  // 0: 1 / sqrt(head_dim); the scale of q.k (Gemma's query_pre_attn_scalar^-0.5)
  float attn_softcap = 0.0f;     // 0: none; scores s -> cap * tanh(s / cap) (Gemma 2)
  float final_softcap = 0.0f;    // 0: none; logits l -> cap * tanh(l / cap) (Gemma 2 and 3)
  float residual_scale = 0.0f;   // 0: none; each block's output is multiplied by it before the residual add (Granite)
  float logit_scale = 0.0f;      // 0: none; logits are divided by it (Granite's logits_scaling)
  bool post_norms = false;       // RMSNorm of each block's output before its residual add (Gemma 2 and 3, OLMo 2)
  bool pre_norms = true;         // false: no RMSNorm before attention and the FFN, the block reads x as is (OLMo 2)
  // Q/K RMSNorm (attn_q_norm, attn_k_norm) over each token's whole projection, weights [q_dim] and [kv_dim] (OLMo 2);
  // false: per head, weights [head_dim] (Qwen3, Gemma 3).
  bool qk_norm_whole = false;
  // NoPE layers: layer_skips_rope[l] = 1 leaves that layer's Q and K unrotated (SmolLM3's every 4th); empty: none.
  std::vector<uint8_t> layer_skips_rope;
  // Llama 4's attention temperature (Ministral 3's llama_4_scaling_beta; 0 = none): a token at position p has its
  // query multiplied by 1 + attn_temperature_scale * ln(1 + floor(p / rope_original_context)).
  float attn_temperature_scale = 0.0f;
  // Sliding-window attention: a token at position p sees positions p - sliding_window + 1 .. p, on the layers
  // marked in layer_is_swa ([num_layers], 1 = windowed; empty = every layer when sliding_window > 0).
  int32_t sliding_window = 0;
  std::vector<uint8_t> layer_is_swa;
  // RoPE of the full-attention layers: linear scaling (positions times rope_freq_scale, llama.cpp's
  // 1 / rope.scaling.factor); of the windowed ones: their own base and scale when non-zero (Gemma 3's local base
  // 10000, unscaled), else the same as the full layers'.
  float rope_freq_scale = 1.0f;
  float rope_theta_swa = 0.0f;
  float rope_freq_scale_swa = 0.0f;
  // The windowed layers rotate plainly: no YaRN blend and magnitude 1, whatever the full layers' scaling (OLMo 3).
  bool rope_swa_plain = false;
  float rope_attn_factor = 1.0f;  // cos and sin multiplied by it (rope.scaling.attn_factor; LongRoPE's magnitude)
  RopeScalingType rope_scaling = RopeScalingType::kLinear;
  // YaRN, as llama.cpp's rope_yarn computes it (model/rope_tables.h): the ramp's weight (rope.scaling.
  // yarn_ext_factor; negative = unset: 1 under yarn, else 0), the magnitude factor used when the ramp is off
  // (yarn_attn_factor; with the ramp on, llama.cpp derives the magnitude from the scale factor instead), the ramp's
  // ends in rotations over the original context (yarn_beta_fast, yarn_beta_slow), and HF's mscale_all_dim
  // (yarn_log_multiplier; 0 = none). The original context is rope_original_context.
  float yarn_ext_factor = -1.0f;
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  float yarn_log_multiplier = 0.0f;
  // LongRoPE (Phi-3): two sets of per-pair frequency divisors; the long set when the context a sequence is
  // configured for (Workspace::rope_context) exceeds rope_original_context (as llama.cpp chooses), else the short
  // one. Empty: none.
  std::vector<float> rope_long_factors, rope_short_factors;
  // The context the model was trained for before scaling (rope.scaling.original_context_length, default
  // context_length): LongRoPE's switch point, YaRN's ramp.
  int32_t rope_original_context = 0;
  // Mixture of experts (num_experts > 0): each token's FFN is the weighted sum of num_experts_used experts of
  // expert_hidden_dim units, chosen by a softmax router (the top-k weights renormalized to sum 1 when
  // expert_weights_norm, then times expert_weights_scale when non-zero).
  int32_t num_experts = 0;
  int32_t num_experts_used = 0;
  int32_t expert_hidden_dim = 0;
  bool expert_weights_norm = false;
  float expert_weights_scale = 0.0f;
  // An MoE layer's shared expert (shared_expert_hidden_dim > 0; 0 = none): an FFN of that many units that every
  // token runs besides its routed experts, its output added to theirs; when shared_expert_gated, first multiplied
  // by sigmoid(x . w) with w the layer's gate vector (Qwen2-MoE's shared_expert_gate).
  int32_t shared_expert_hidden_dim = 0;
  bool shared_expert_gated = false;
  // gpt-oss's router: the top-k experts by logit, their weights the softmax over those k logits only (llama.cpp's
  // SOFTMAX_WEIGHT gating); false: the softmax over every expert, then the top-k of it.
  bool expert_softmax_after_topk = false;
  // DeepSeek-V2's router (llama.cpp's expert_gating_func 2): sigmoid(logit) per expert in place of the softmax; the
  // experts are chosen by that plus the layer's selection bias (exp_probs_b, when it has one), each weighted by the
  // unbiased sigmoid. expert_groups > 1: the experts in that many equal groups, a group scored by its two best biased
  // values, and only the best expert_groups_used groups' experts chosen from (DeepSeek-V3's group-limited routing).
  bool expert_gating_sigmoid = false;
  int32_t expert_groups = 0;
  int32_t expert_groups_used = 0;
  // The first leading_dense_layers layers have a dense FFN of hidden_dim units in place of the experts (DeepSeek's
  // first_k_dense_replace).
  int32_t leading_dense_layers = 0;
  // Multi-head latent attention (DeepSeek-V2, mla_kv_lora_rank > 0), as llama.cpp's deepseek2 graph runs it with
  // the absorbed projections: the cache holds one row a token, head_dim = mla_kv_lora_rank + rope_dim values (the
  // RMS-normed latent, then the rotated shared key), read by every query head as K (one KV head) and its latent
  // part as V (KvShape::v_in_k: no V bytes). A query head's nope part (mla_key_dim - rope_dim values, from attn_q or
  // the q LoRA attn_q_a, attn_q_a_norm, attn_q_b of mla_q_lora_rank) goes through its attn_k_b into the latent
  // space, its rope part is rotated; the attention output's latent part goes through the head's attn_v_b to
  // mla_value_dim values before attn_output. Scores are scaled by 1 / sqrt(mla_key_dim), times YaRN's magnitude
  // squared (rope_tables.h: mla_score_scale).
  int32_t mla_q_lora_rank = 0;   // 0: a plain attn_q (DeepSeek-V2-Lite)
  int32_t mla_kv_lora_rank = 0;
  int32_t mla_key_dim = 0;       // attention.key_length_mla: a head's nope and rope dims
  int32_t mla_value_dim = 0;     // attention.value_length_mla
  // Gemma 4's MoE layers: the dense FFN (hidden_dim units on ffn_norm) runs beside the experts (on their own
  // pre-norm, pre_ffw_norm_2), each branch's output RMS-normed (post_ffw_norm_1, post_ffw_norm_2) before the two are
  // summed and post-normed (post_ffw_norm); the router reads rmsnorm(x) / sqrt(dim) times a learned vector
  // (ffn_gate_inp.scale) instead of the experts' normed input.
  bool moe_beside_dense_ffn = false;
  // The pre-FFN RMSNorm's weights are stored as blk.N.post_attention_norm (gpt-oss, llama.cpp's name), not ffn_norm.
  bool ffn_norm_is_post_attention_norm = false;
  // Hybrid models (LFM2): layer_is_conv[l] = 1 makes layer l a short-convolution block in place of attention
  // (in_proj to B, C and x; a depthwise causal convolution of shortconv_l_cache taps over B * x; C times that;
  // out_proj); empty: none. Such a layer has no K/V: it keeps the last shortconv_l_cache - 1 inputs of its
  // convolution, (shortconv_l_cache - 1) * dim floats, per sequence (the recurrent state, kv/kv_cache_view.h).
  std::vector<uint8_t> layer_is_conv;
  int32_t shortconv_l_cache = 0;
  // Qwen3.5 / Qwen3-Next's gated DeltaNet (delta_net_v_heads > 0): the recurrent layers of layer_is_conv are gated
  // DeltaNet blocks instead of short convolutions. A token's attn_qkv row [conv_dim()] (Q of delta_net_k_heads heads,
  // K likewise, V of delta_net_v_heads heads, each delta_net_head_dim wide) runs through a depthwise causal
  // convolution of delta_net_conv_kernel taps and SiLU; Q and K are L2-normed; value head h reads key head
  // h % delta_net_k_heads (llama.cpp's tiled order, Qwen3.5), or h / (v_heads / k_heads) when
  // delta_net_grouped_v_heads (the value heads grouped by key head, Qwen3-Next); each value head keeps a
  // [head_dim x head_dim] state, decayed by exp(g) with g = ssm_a * softplus(alpha + dt_bias), corrected by the
  // delta rule with strength sigmoid(beta); the output is RMS-normed per head (ssm_norm), times SiLU(z) (attn_gate),
  // then ssm_out. A recurrent layer's state: the last delta_net_conv_kernel - 1 inputs of its convolution and the
  // value heads' matrices.
  int32_t delta_net_conv_kernel = 0;  // ssm.conv_kernel
  int32_t delta_net_k_heads = 0;      // ssm.group_count
  int32_t delta_net_v_heads = 0;      // ssm.time_step_rank
  int32_t delta_net_head_dim = 0;     // ssm.state_size (key and value heads alike)
  bool delta_net_grouped_v_heads = false;
  // Gated attention (Qwen3.5): attn_q gives each head's query and then its output gate (2 * head_dim rows a head);
  // the attention output is multiplied by sigmoid(gate) before attn_output.
  bool attn_output_gate = false;
  // The final norm is GGUF's token_embd_norm.weight (LFM2: HF's embedding_norm) instead of output_norm.weight.
  bool output_norm_is_token_embd_norm = false;

  // Gemma 4's layer shapes. Windowed layers may have their own head size and rotated dims (head_dim_swa,
  // rope_dim_swa; 0 = head_dim, rope_dim), and then the rope_freq_factors belong to the full layers only
  // (rope_factors_full_only); each layer its own FFN width (layer_hidden_dims, [num_layers]; empty = hidden_dim,
  // which is then their maximum).
  int32_t head_dim_swa = 0;
  int32_t rope_dim_swa = 0;
  // KV heads per layer where they differ (llama.cpp's head_count_kv array; Gemma 4's full layers:
  // num_global_key_value_heads), 0 on a recurrent layer; empty: num_kv_heads on every layer. num_kv_heads is then
  // their maximum.
  std::vector<int32_t> layer_kv_heads;
  // Gemma 4's attention_k_eq_v: the full-attention layers have no V projection; V is K's projection (before K's norm
  // and RoPE), RMS-normed as any V.
  bool full_layers_v_is_k = false;
  bool rope_factors_full_only = false;
  std::vector<int32_t> layer_hidden_dims;
  // Layers that share another layer's K/V (Gemma 4): the last num_kv_shared_layers layers write no K/V and read
  // those of the last earlier layer of their own kind (windowed or full), so the cache holds num_kv_layers() layers.
  int32_t num_kv_shared_layers = 0;
  // V RMS-normed per head without a weight before it is stored (Gemma 4).
  bool v_norm = false;
  // Per-layer token embeddings (Gemma 4's E sizes; 0 = none): each layer gets a per_layer_input_dim-wide input made
  // of a second embedding table's row and a projection of the embedded token, mixed into its output through a
  // gated projection.
  int32_t per_layer_input_dim = 0;
  // Encoder families (BERT, model/bert_model.h): attention sees every token of its sequence (no causal mask), so a
  // sequence is computed whole in one step and its K/V serves no other prompt; absolute position and token-type
  // embeddings instead of RoPE, LayerNorm (weight and bias, epsilon in rms_eps) after each block, a GELU FFN, no LM
  // head (an optional classification head scores a cross-encoder's pair). num_token_types: token_types.weight's rows.
  bool encoder = false;
  int32_t num_token_types = 0;
  // A decoder reranker's head as llama.cpp reads it for qwen3 (a Qwen3-Reranker): cls.output.weight, when the file
  // has it, scores the last prompt token's final hidden state, and a softmax over its rows gives the scores.
  bool last_token_rank_head = false;

  bool skips_rope(int32_t layer) const { return !layer_skips_rope.empty() && layer_skips_rope[size_t(layer)] != 0; }
  bool is_swa_layer(int32_t layer) const {
    return sliding_window > 0 && (layer_is_swa.empty() || layer_is_swa[size_t(layer)] != 0);
  }
  // Widest FFN activation row: the dense FFN's and an expert's.
  int32_t max_hidden_dim() const { return hidden_dim > expert_hidden_dim ? hidden_dim : expert_hidden_dim; }
  // The widest FFN activation row a token computes in one piece: the dense FFN's or the shared expert's (the routed
  // experts' rows have buffers of their own).
  int32_t ffn_width() const { return hidden_dim > shared_expert_hidden_dim ? hidden_dim : shared_expert_hidden_dim; }
  // A layer's head size, rotated dims, Q and K/V widths, FFN width.
  int32_t layer_head_dim(int32_t layer) const {
    return head_dim_swa > 0 && is_swa_layer(layer) ? head_dim_swa : head_dim;
  }
  int32_t layer_rope_dim(int32_t layer) const {
    return rope_dim_swa > 0 && is_swa_layer(layer) ? rope_dim_swa : rope_dim;
  }
  int32_t layer_num_kv_heads(int32_t layer) const {
    return layer_kv_heads.empty() ? num_kv_heads : layer_kv_heads[size_t(layer)];
  }
  int32_t layer_q_dim(int32_t layer) const { return num_heads * layer_head_dim(layer); }
  int32_t layer_kv_dim(int32_t layer) const { return layer_num_kv_heads(layer) * layer_head_dim(layer); }
  bool layer_v_is_k(int32_t layer) const { return full_layers_v_is_k && !is_swa_layer(layer); }
  int32_t layer_hidden_dim(int32_t layer) const {
    return layer_hidden_dims.empty() ? hidden_dim : layer_hidden_dims[size_t(layer)];
  }
  // Layers that differ from one another in shape or in what they compute (the fused ops assume they do not).
  bool has_layer_shapes() const {
    return head_dim_swa > 0 || rope_dim_swa > 0 || !layer_hidden_dims.empty() || num_kv_shared_layers > 0 ||
           !layer_kv_heads.empty() || full_layers_v_is_k;
  }
  bool is_conv_layer(int32_t layer) const { return !layer_is_conv.empty() && layer_is_conv[size_t(layer)] != 0; }
  int32_t num_conv_layers() const {
    int32_t n = 0;
    for (uint8_t c : layer_is_conv) n += c != 0;
    return n;
  }
  int32_t num_attention_layers() const { return num_layers - num_conv_layers(); }
  // Conv layers before `layer`: a conv layer's index among the conv layers (its slice of the recurrent state).
  int32_t conv_layers_before(int32_t layer) const {
    int32_t n = 0;
    for (int32_t l = 0; l < layer && size_t(l) < layer_is_conv.size(); ++l) n += layer_is_conv[size_t(l)] != 0;
    return n;
  }
  // The first of the layers that share an earlier layer's K/V (num_layers when none do).
  int32_t first_shared_kv_layer() const { return num_layers - num_kv_shared_layers; }
  // The K/V layers the cache holds: the attention layers that write their own K/V (neither conv nor shared layers).
  int32_t num_kv_layers() const {
    const int32_t first_shared = first_shared_kv_layer();
    return first_shared - conv_layers_before(first_shared);
  }
  bool writes_kv(int32_t layer) const { return layer < first_shared_kv_layer() && !is_conv_layer(layer); }
  // The cache layer whose K/V an attention layer reads: its index among the writing attention layers, or for a
  // shared layer that of the last earlier writing layer of its kind (windowed or full); -1 for a conv layer, or when
  // no earlier layer of its kind exists (which model_config_from_gguf refuses).
  int32_t kv_layer(int32_t layer) const {
    if (is_conv_layer(layer)) return -1;
    if (layer < first_shared_kv_layer()) return layer - conv_layers_before(layer);
    for (int32_t l = first_shared_kv_layer() - 1; l >= 0; --l)
      if (!is_conv_layer(l) && is_swa_layer(l) == is_swa_layer(layer)) return l - conv_layers_before(l);
    return -1;
  }
  bool is_moe_layer(int32_t layer) const { return num_experts > 0 && layer >= leading_dense_layers; }
  bool is_mla() const { return mla_kv_lora_rank > 0; }
  int32_t mla_nope_dim() const { return mla_key_dim - rope_dim; }
  bool is_delta_net() const { return delta_net_v_heads > 0; }
  int32_t delta_net_key_dim() const { return delta_net_k_heads * delta_net_head_dim; }
  int32_t delta_net_value_dim() const { return delta_net_v_heads * delta_net_head_dim; }
  int32_t delta_net_conv_dim() const { return 2 * delta_net_key_dim() + delta_net_value_dim(); }
  // A DeltaNet layer's state: its convolution's window [conv_kernel - 1][conv_dim], then the value heads' matrices.
  int64_t delta_net_window_floats() const { return int64_t(delta_net_conv_kernel - 1) * delta_net_conv_dim(); }
  int64_t delta_net_matrix_floats() const {
    return int64_t(delta_net_v_heads) * delta_net_head_dim * delta_net_head_dim;
  }
  // The recurrent state of one sequence: every recurrent layer's (a conv layer's window, or a DeltaNet layer's
  // window and matrices), in layer order.
  int64_t conv_state_floats() const {
    return is_delta_net() ? delta_net_window_floats() + delta_net_matrix_floats()
                          : int64_t(shortconv_l_cache - 1) * dim;
  }
  int64_t state_floats_per_seq() const { return num_conv_layers() * conv_state_floats(); }
  bool has_recurrent_state() const { return state_floats_per_seq() > 0; }
  // The widest of the layers': a cache row holds kv_dim() values (a narrower layer uses the front of it).
  int32_t max_head_dim() const { return head_dim_swa > head_dim ? head_dim_swa : head_dim; }
  int32_t kv_dim() const {
    if (layer_kv_heads.empty()) return num_kv_heads * max_head_dim();
    int32_t widest = 0;
    for (int32_t l = 0; l < num_layers; ++l) widest = layer_kv_dim(l) > widest ? layer_kv_dim(l) : widest;
    return widest;
  }
  KvShape kv_shape() const { return {num_kv_layers(), kv_dim(), num_kv_heads, is_mla()}; }
  int32_t q_dim() const { return num_heads * max_head_dim(); }
};

// Bounds on the hyper-parameters, checked before anything proportional to them is allocated. Generous: the
// largest public models sit far inside them (hidden size 16384, FFN 53248, 126 blocks, 128 heads, head size 256,
// vocabularies of 262144, contexts of 10M); they stop corrupted or hostile files, not big models.
struct ModelConfigLimits {
  static constexpr int32_t kMaxEmbeddingLength = 1 << 20;
  static constexpr int32_t kMaxFeedForwardLength = 1 << 22;
  static constexpr int32_t kMaxBlockCount = 1 << 16;
  static constexpr int32_t kMaxHeadCount = 1 << 14;
  static constexpr int32_t kMaxHeadDim = 4096;
  static constexpr int32_t kMaxVocabSize = 1 << 23;
  static constexpr int32_t kMaxContextLength = 1 << 24;
  static constexpr int32_t kMaxExperts = 512;  // llama.cpp's LLAMA_MAX_EXPERTS
};

// Errors name the key: "model.gguf: llama.attention.head_count = 0 must be positive".
Result<ModelConfig> model_config_from_gguf(const format::GgufFile& file);

}  // namespace pagoda
