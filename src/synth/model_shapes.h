// ModelShape: the hyper-parameters of real models of the families pagoda runs, by name, for random-weight models
// (`pagoda gen-model --shape NAME`). Plain values; no weights.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::synth {

struct ModelShape {
  std::string name;
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  // The HF family of the shape ("LlamaForCausalLM", "Qwen3ForCausalLM", ...): gen-model writes it as an HF
  // folder (and converts that for --format gguf). Empty: the plain llama GGUF writer.
  std::string hf_architecture{};
  int32_t head_dim = 0;  // 0: dim / num_heads
  bool tied_embeddings = false;
  float llama3_rope_factor = 0.0f;  // llama3 rope scaling (low 1, high 4, original context 8192); 0 = none
  int32_t bos_token_id = 1;
  int32_t eos_token_id = 2;
  // The family's own config.json fields, as published (JSON object text merged into the common ones): Gemma's
  // soft-caps and windows, Granite's multipliers, the experts of an MoE model, ... Empty: none.
  std::string hf_extra_json{};
  // MoE: experts per layer, chosen per token, and each one's FFN width (for num_params); 0: dense.
  int32_t num_experts = 0;
  int32_t num_experts_used = 0;
  int32_t expert_hidden_dim = 0;
  // The shared expert's FFN width (Qwen2-MoE; Gemma 4's MoE: the dense FFN beside the experts); 0: none.
  int32_t shared_expert_hidden_dim = 0;
  // Gemma 4: the last layers that read an earlier layer's K/V (config.json's num_kv_shared_layers; `--layers N`
  // keeps the first N layers, so the count shrinks with the cut), and the per-layer embeddings' width (for
  // num_params; the config field is in hf_extra_json). 0: none.
  int32_t kv_shared_layers = 0;
  int32_t per_layer_input_dim = 0;
  // An embedding model in Qwen3-Embedding's layout: tensors named without the "model." prefix, no lm_head (tied),
  // and sentence-transformers' modules.json + 1_Pooling/config.json naming this pooling mode ("lasttoken", "mean"
  // or "cls"). Empty: a causal LM's folder.
  std::string embedding_pooling{};
  // A decoder reranker as llama.cpp's converter writes Qwen3-Reranker (a qwen3 shape, GGUF only): rank pooling, a
  // classification head cls.output.weight of two rows (random, as every matrix; the converter copies the LM head's
  // "yes" and "no" rows), classifier labels yes and no, and the rerank prompt template
  // (tokenizer.chat_template.rerank).
  bool decoder_reranker = false;
  // config.json's matryoshka_dimensions (vLLM's declaration of truncatable embeddings); empty: not written.
  std::vector<int32_t> matryoshka_dimensions{};
  // For an encoder (is_encoder), the GGUF's pooling_type: "mean", "cls", or "rank" (a reranker: the classification
  // head). A family written straight as a GGUF in llama.cpp's layout ("gpt-oss": synth/random_gpt_oss_writer.h, or
  // its HF folder through hf_architecture for `--format hf`; "bert":
  // synth/random_bert_writer.h), with
  // its sliding window (alternate layers) and YaRN scaling (factor over an original context; 0: none). Empty: the
  // HF folder or the llama writer.
  std::string gguf_architecture{};
  int32_t sliding_window = 0;
  float yarn_factor = 0.0f;
  int32_t yarn_original_context = 0;
  // jina-bert-v2: each block's LayerNorms of Q and K and its second LayerNorm after attention (attn_norm_2).
  bool encoder_qk_norms = false;
  // bert with rank pooling: constructed weights in place of random ones, whose head scores a query word seen again
  // in the document (synth/random_bert_writer.h), so that a relevant document ranks first. f32 only.
  bool word_overlap_head = false;
  // Gated DeltaNet hybrids ("qwen35", "qwen3next": synth/random_qwen35_writer.h): every fourth layer full attention
  // (gated, with rope_dim of the head's dims rotated), the others DeltaNet layers of these heads (key heads, value
  // heads, both of delta_net_head_dim) after a convolution of delta_net_conv_kernel taps. 0: none.
  int32_t delta_net_k_heads = 0;
  int32_t delta_net_v_heads = 0;
  int32_t delta_net_head_dim = 0;
  int32_t delta_net_conv_kernel = 0;
  int32_t rope_dim = 0;  // 0: the whole head
  // DeepSeek-V2's latent attention ("deepseek2": synth/random_deepseek2_writer.h; > 0 on): head_dim is a head's key
  // size (its nope dims and rope_dim), these the latent's and the q LoRA's ranks (0: a plain attn_q) and a head's
  // value size. Its FFN: the first leading_dense_layers layers dense (hidden_dim), the others experts beside
  // shared_expert_hidden_dim shared units (a whole number of experts), routed by sigmoids with a selection bias
  // (expert_gating_sigmoid; else a softmax), in expert_groups groups of which expert_groups_used are chosen from (0:
  // none), weights renormalized (expert_weights_norm) and scaled (expert_weights_scale; 0: none); YaRN's log multiplier
  // as the GGUF key holds it (0.1 * HF's mscale_all_dim).
  int32_t mla_kv_lora_rank = 0;
  int32_t mla_q_lora_rank = 0;
  int32_t mla_value_dim = 0;
  int32_t leading_dense_layers = 0;
  bool expert_gating_sigmoid = false;
  int32_t expert_groups = 0;
  int32_t expert_groups_used = 0;
  bool expert_weights_norm = false;
  float expert_weights_scale = 0.0f;
  float yarn_log_multiplier = 0.0f;

  int32_t head_size() const { return head_dim > 0 ? head_dim : dim / num_heads; }
  // The encoder families written by synth/random_bert_writer.h: bert, jina-bert-v2, nomic-bert.
  bool is_encoder() const {
    return gguf_architecture == "bert" || gguf_architecture == "jina-bert-v2" || gguf_architecture == "nomic-bert";
  }
  int64_t num_params() const;         // weights of all matrices and norms
  int64_t num_active_params() const;  // those one token reads (its chosen experts only)
};

std::optional<ModelShape> find_model_shape(std::string_view name);
std::vector<std::string> model_shape_names();

}  // namespace pagoda::synth
