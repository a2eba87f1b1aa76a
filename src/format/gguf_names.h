// The GGUF metadata keys and tensor names pagoda reads and writes, as llama.cpp's gguf-py (constants.py) spells
// them, in one table: general.*, tokenizer.*, the hyper-parameters every architecture has under "<arch>.", and the
// Llama block's tensor names. A family's own keys (Gemma's soft-capping, MoE expert counts, ...) live with that
// family in model/arch_*.cc. Constants only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::format::gguf_key {

inline constexpr const char* kArchitecture = "general.architecture";
inline constexpr const char* kName = "general.name";
inline constexpr const char* kAlignment = "general.alignment";
inline constexpr const char* kFileType = "general.file_type";
// A model split over several files (llama.cpp's gguf-split): every split carries these; the first one also the rest.
inline constexpr const char* kSplitNo = "split.no";                      // u16, 0-based
inline constexpr const char* kSplitCount = "split.count";                // u16
inline constexpr const char* kSplitTensorsCount = "split.tensors.count";  // i32, over all splits

inline constexpr const char* kTokenizerModel = "tokenizer.ggml.model";  // llama (SentencePiece) | gpt2 (BPE)
inline constexpr const char* kTokenizerPre = "tokenizer.ggml.pre";      // the BPE pre-tokenizer's name
inline constexpr const char* kTokens = "tokenizer.ggml.tokens";
inline constexpr const char* kScores = "tokenizer.ggml.scores";
inline constexpr const char* kTokenType = "tokenizer.ggml.token_type";
inline constexpr const char* kMerges = "tokenizer.ggml.merges";
inline constexpr const char* kBosId = "tokenizer.ggml.bos_token_id";
inline constexpr const char* kEosId = "tokenizer.ggml.eos_token_id";
inline constexpr const char* kUnknownId = "tokenizer.ggml.unknown_token_id";
inline constexpr const char* kEotId = "tokenizer.ggml.eot_token_id";
// BERT's WordPiece vocabularies (llama.cpp's spelling of "separator" included).
inline constexpr const char* kSeparatorId = "tokenizer.ggml.seperator_token_id";
inline constexpr const char* kPaddingId = "tokenizer.ggml.padding_token_id";
inline constexpr const char* kClsId = "tokenizer.ggml.cls_token_id";
inline constexpr const char* kMaskId = "tokenizer.ggml.mask_token_id";
inline constexpr const char* kNormalizerLowercase = "tokenizer.ggml.normalizer.lowercase";
inline constexpr const char* kNormalizerStripAccents = "tokenizer.ggml.normalizer.strip_accents";
inline constexpr const char* kEomId = "tokenizer.ggml.eom_token_id";
// Fill-in-the-middle tokens (llama.cpp's names; older files say prefix, suffix and middle).
inline constexpr const char* kFimPreId = "tokenizer.ggml.fim_pre_token_id";
inline constexpr const char* kFimSufId = "tokenizer.ggml.fim_suf_token_id";
inline constexpr const char* kFimMidId = "tokenizer.ggml.fim_mid_token_id";
inline constexpr const char* kPrefixId = "tokenizer.ggml.prefix_token_id";
inline constexpr const char* kSuffixId = "tokenizer.ggml.suffix_token_id";
inline constexpr const char* kMiddleId = "tokenizer.ggml.middle_token_id";
inline constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
inline constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
inline constexpr const char* kAddSep = "tokenizer.ggml.add_sep_token";
inline constexpr const char* kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
inline constexpr const char* kChatTemplate = "tokenizer.chat_template";
// A named template (llama.cpp's tokenizer.chat_template.NAME, listed in tokenizer.chat_templates): a reranker's
// query/document prompt, with {query} and {document} in it (Qwen3-Reranker's, written by llama.cpp's converter).
inline constexpr const char* kRerankTemplate = "tokenizer.chat_template.rerank";
inline constexpr const char* kChatTemplateNames = "tokenizer.chat_templates";

// Under "<arch>.": arch_key("llama", kContextLength) = "llama.context_length".
inline constexpr const char* kContextLength = "context_length";
inline constexpr const char* kEmbeddingLength = "embedding_length";
inline constexpr const char* kBlockCount = "block_count";
inline constexpr const char* kFeedForwardLength = "feed_forward_length";
inline constexpr const char* kHeadCount = "attention.head_count";
inline constexpr const char* kHeadCountKv = "attention.head_count_kv";
inline constexpr const char* kKeyLength = "attention.key_length";
inline constexpr const char* kValueLength = "attention.value_length";
inline constexpr const char* kRmsEpsilon = "attention.layer_norm_rms_epsilon";
inline constexpr const char* kRopeDimensionCount = "rope.dimension_count";
inline constexpr const char* kRopeFreqBase = "rope.freq_base";
inline constexpr const char* kRopeScalingType = "rope.scaling.type";  // none | linear | yarn (| longrope: Phi-3)
inline constexpr const char* kRopeScalingFactor = "rope.scaling.factor";
inline constexpr const char* kRopeScalingOriginalContext = "rope.scaling.original_context_length";
inline constexpr const char* kRopeScalingAttnFactor = "rope.scaling.attn_factor";
inline constexpr const char* kRopeScalingYarnExtFactor = "rope.scaling.yarn_ext_factor";
inline constexpr const char* kRopeScalingYarnAttnFactor = "rope.scaling.yarn_attn_factor";
inline constexpr const char* kRopeScalingYarnBetaFast = "rope.scaling.yarn_beta_fast";
inline constexpr const char* kRopeScalingYarnBetaSlow = "rope.scaling.yarn_beta_slow";
inline constexpr const char* kRopeScalingYarnLogMultiplier = "rope.scaling.yarn_log_multiplier";
inline constexpr const char* kRopeScaleLinear = "rope.scale_linear";  // the older spelling of the linear factor
inline constexpr const char* kVocabSize = "vocab_size";
inline constexpr const char* kPoolingType = "pooling_type";  // embeddings: 0 none, 1 mean, 2 cls, 3 last, 4 rank
// Encoders (BERT): their LayerNorm's epsilon, whether attention is causal, a classification head's labels (one
// output each), and the rows of token_types.weight (llama.cpp keeps that count under the tokenizer's keys).
inline constexpr const char* kLayerNormEpsilon = "attention.layer_norm_epsilon";
inline constexpr const char* kAttentionCausal = "attention.causal";
inline constexpr const char* kClassifierOutputLabels = "classifier.output_labels";
inline constexpr const char* kTokenTypeCount = "tokenizer.ggml.token_type_count";

// Matryoshka (truncatable) embeddings. Neither llama.cpp (gguf-py's constants.py) nor the GGUF spec has a key for
// them, so these are pagoda's own, under "pagoda.": vLLM's config.json fields, written by `pagoda convert --from hf`.
inline constexpr const char* kIsMatryoshka = "pagoda.embedding.is_matryoshka";  // bool: any size up to the width
inline constexpr const char* kMatryoshkaDimensions = "pagoda.embedding.matryoshka_dimensions";  // [i32]: these only

inline std::string arch_key(std::string_view arch, std::string_view suffix) {
  std::string key(arch);
  key += '.';
  key += suffix;
  return key;
}

}  // namespace pagoda::format::gguf_key

namespace pagoda::format::gguf_tensor {

inline constexpr const char* kTokenEmbedding = "token_embd.weight";
inline constexpr const char* kOutputNorm = "output_norm.weight";
inline constexpr const char* kTokenEmbeddingNorm = "token_embd_norm.weight";  // LFM2's final norm
inline constexpr const char* kOutput = "output.weight";  // absent: the classifier is tied to token_embd

// A block's tensors: block_tensor(3, kAttnQ) = "blk.3.attn_q.weight".
inline constexpr const char* kAttnNorm = "attn_norm";
inline constexpr const char* kAttnQ = "attn_q";
inline constexpr const char* kAttnK = "attn_k";
inline constexpr const char* kAttnV = "attn_v";
inline constexpr const char* kAttnOutput = "attn_output";
inline constexpr const char* kFfnNorm = "ffn_norm";
inline constexpr const char* kFfnGate = "ffn_gate";
inline constexpr const char* kFfnUp = "ffn_up";
inline constexpr const char* kFfnDown = "ffn_down";
// Fused and optional block tensors (Phi-3's fused QKV, Qwen3's Q/K norms), MoE (router, stacked experts, and the
// shared expert with its sigmoid gate vector) and Gemma's post-norms.
inline constexpr const char* kAttnQkv = "attn_qkv";
inline constexpr const char* kAttnQNorm = "attn_q_norm";
inline constexpr const char* kAttnKNorm = "attn_k_norm";
inline constexpr const char* kFfnGateInp = "ffn_gate_inp";
inline constexpr const char* kFfnGateExps = "ffn_gate_exps";
inline constexpr const char* kFfnUpExps = "ffn_up_exps";
inline constexpr const char* kFfnDownExps = "ffn_down_exps";
inline constexpr const char* kFfnGateUpExps = "ffn_gate_up_exps";  // gate's rows, then up's, per expert (Gemma 4)
inline constexpr const char* kFfnGateInpShexp = "ffn_gate_inp_shexp";
inline constexpr const char* kFfnGateShexp = "ffn_gate_shexp";
inline constexpr const char* kFfnUpShexp = "ffn_up_shexp";
inline constexpr const char* kFfnDownShexp = "ffn_down_shexp";
inline constexpr const char* kPostAttentionNorm = "post_attention_norm";
inline constexpr const char* kPostFfwNorm = "post_ffw_norm";
// Gemma 4's MoE layers: the experts' pre-norm and each branch's post-norm (dense FFN: 1, experts: 2).
inline constexpr const char* kPreFfwNorm2 = "pre_ffw_norm_2";
inline constexpr const char* kPostFfwNorm1 = "post_ffw_norm_1";
inline constexpr const char* kPostFfwNorm2 = "post_ffw_norm_2";
// Gemma 4's per-layer token embeddings (the model's table, projection and norm; each block's gate, projection and
// norm) and each block's output scale.
inline constexpr const char* kPerLayerTokenEmbedding = "per_layer_token_embd.weight";
inline constexpr const char* kPerLayerModelProj = "per_layer_model_proj.weight";
inline constexpr const char* kPerLayerProjNorm = "per_layer_proj_norm.weight";
inline constexpr const char* kPerLayerInpGate = "inp_gate";
inline constexpr const char* kPerLayerProj = "proj";
inline constexpr const char* kPerLayerPostNorm = "post_norm";
inline constexpr const char* kLayerOutputScale = "layer_output_scale";
inline constexpr const char* kAttnSinks = "attn_sinks";  // gpt-oss: a sink logit per query head
inline constexpr const char* kShortConvConv = "shortconv.conv";         // LFM2: [L, dim] depthwise taps
inline constexpr const char* kShortConvInProj = "shortconv.in_proj";    // [dim, 3 * dim]: B, C, x
inline constexpr const char* kShortConvOutProj = "shortconv.out_proj";  // [dim, dim]
// Encoders (BERT): position and token-type embeddings, the embeddings' LayerNorm (".weight" / ".bias" after the
// stem), each block's LayerNorms after attention and after the FFN, and a reranker's classification head (a dense
// layer, then the output projection; "cls.weight", "cls.output.bias", ...).
inline constexpr const char* kPositionEmbedding = "position_embd.weight";
inline constexpr const char* kTokenTypes = "token_types.weight";
inline constexpr const char* kTokenEmbeddingNormStem = "token_embd_norm";
inline constexpr const char* kAttnOutputNorm = "attn_output_norm";
inline constexpr const char* kLayerOutputNorm = "layer_output_norm";
inline constexpr const char* kClassifierStem = "cls";
inline constexpr const char* kClassifierOutputStem = "cls.output";
// Gated DeltaNet (Qwen3.5, Qwen3-Next), llama.cpp's names: attn_qkv [dim, conv_dim] and attn_gate (z) [dim, value_dim]
// beside these; ssm_dt's tensor is its "bias", ssm_a's has no kind suffix (blk.N.ssm_a).
inline constexpr const char* kSsmConv1d = "ssm_conv1d";  // [conv_kernel, conv_dim] depthwise taps, f32
inline constexpr const char* kSsmDt = "ssm_dt";          // .bias [v_heads]
inline constexpr const char* kSsmA = "ssm_a";            // [v_heads]: -exp(A_log)
inline constexpr const char* kSsmBeta = "ssm_beta";      // [dim, v_heads]
inline constexpr const char* kSsmAlpha = "ssm_alpha";    // [dim, v_heads]
// Qwen3-Next's beta and alpha in one matrix [dim, 2 * v_heads]: per key head, its value heads' beta rows, then their
// alpha rows; and the fused [q, k, v, z] per key head of its older GGUFs (not read: pagoda refuses it by name).
inline constexpr const char* kSsmBetaAlpha = "ssm_ba";
inline constexpr const char* kSsmIn = "ssm_in";
inline constexpr const char* kSsmNorm = "ssm_norm";      // [head_dim]
inline constexpr const char* kSsmOut = "ssm_out";        // [value_dim, dim]
inline constexpr const char* kAttnGate = "attn_gate";
// Multi-head latent attention (DeepSeek-V2), llama.cpp's names: the q LoRA (attn_q_a [dim, q_lora_rank], its norm,
// attn_q_b [q_lora_rank, heads * key_length_mla]), the latent and rope key (attn_kv_a_mqa [dim, kv_lora_rank + rope]),
// the latent's norm, each head's absorbed projections (attn_k_b [nope, kv_lora_rank, heads], attn_v_b [kv_lora_rank,
// value_length_mla, heads]), the older unsplit attn_kv_b (refused by name); and the experts' selection bias
// (exp_probs_b.bias [experts]).
inline constexpr const char* kAttnQA = "attn_q_a";
inline constexpr const char* kAttnQANorm = "attn_q_a_norm";
inline constexpr const char* kAttnQB = "attn_q_b";
inline constexpr const char* kAttnKvAMqa = "attn_kv_a_mqa";
inline constexpr const char* kAttnKvANorm = "attn_kv_a_norm";
inline constexpr const char* kAttnKB = "attn_k_b";
inline constexpr const char* kAttnVB = "attn_v_b";
inline constexpr const char* kAttnKvB = "attn_kv_b";
inline constexpr const char* kFfnExpProbsB = "exp_probs_b";

inline std::string block_tensor(int32_t layer, std::string_view name, std::string_view kind = "weight") {
  std::string tensor = "blk." + std::to_string(layer) + ".";
  tensor += name;
  if (kind.empty()) return tensor;  // a tensor named without a kind (ssm_a)
  tensor += '.';
  tensor += kind;
  return tensor;
}

}  // namespace pagoda::format::gguf_tensor
