// The architecture table (model/architecture.h): each family's config.json read into ModelConfig as the published
// models' configs say (Gemma 2/3, Phi-3 with LongRoPE, Granite, Mixtral, Qwen2-MoE, Qwen3-MoE), what gen-model writes
// reading back the same, and bad family fields as errors naming the file and field. The forward passes are checked end
// to end against llama.cpp in tests/e2e/cli_model_families_test.cc.
#include "model/architecture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/hf_config.h"
#include "model/rope_tables.h"

namespace pagoda {
namespace {

using ::testing::HasSubstr;

TEST(ArchitectureTest, EveryFamilyIsFoundByItsNames) {
  for (const char* name : {"llama", "qwen2", "qwen2moe", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "granite",
                           "smollm3", "olmo2", "mistral3", "exaone4"}) {
    const ArchitectureFamily* f = find_architecture(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->gguf_name, name);
  }
  EXPECT_EQ(find_architecture("gpt2"), nullptr);
  EXPECT_FALSE(find_architecture("llama")->rope_neox);
  EXPECT_FALSE(find_architecture("granite")->rope_neox);
  EXPECT_TRUE(find_architecture("gemma2")->rope_neox);
  EXPECT_TRUE(find_architecture("phi3")->rope_neox);
  EXPECT_TRUE(find_architecture("qwen2moe")->rope_neox);
  for (const char* hf : {"LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
                         "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Gemma2ForCausalLM",
                         "Gemma3ForCausalLM", "Phi3ForCausalLM", "GraniteForCausalLM", "SmolLM3ForCausalLM",
                         "Olmo2ForCausalLM", "Olmo3ForCausalLM", "Ministral3ForCausalLM", "Exaone4ForCausalLM"}) {
    const HfFamily* f = find_hf_family(hf);
    ASSERT_NE(f, nullptr) << hf;
    EXPECT_NE(find_architecture(f->gguf_architecture), nullptr) << hf;
  }
  EXPECT_THAT(supported_architecture_names(), HasSubstr("gemma3"));
  EXPECT_THAT(supported_hf_architecture_names(), HasSubstr("Phi3ForCausalLM"));
}

TEST(ArchitectureTest, SwaPatternOfAPeriodEndsEachPeriodWithAFullLayer) {
  EXPECT_EQ(swa_pattern_of_period(5, 2), (std::vector<uint8_t>{1, 0, 1, 0, 1}));
  EXPECT_EQ(swa_pattern_of_period(7, 6), (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1}));
  EXPECT_EQ(swa_pattern_of_period(3, 0), (std::vector<uint8_t>{1, 1, 1}));
}

// Gemma-2-2b-it's config.json.
const char* const kGemma2 = R"({"architectures": ["Gemma2ForCausalLM"], "attn_logit_softcapping": 50.0,
  "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304, "intermediate_size": 9216,
  "max_position_embeddings": 8192, "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
  "vocab_size": 256000, "bos_token_id": 2, "eos_token_id": [1, 107]})";

TEST(ArchitectureTest, Gemma2ConfigTurnsOnEveryGemmaFeature) {
  auto h = parse_hf_config(kGemma2, "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.architecture, "gemma2");
  EXPECT_TRUE(c.rope_neox);
  EXPECT_FALSE(h->permute_qk);
  EXPECT_TRUE(h->norms_plus_one);
  EXPECT_TRUE(h->tie_word_embeddings);
  EXPECT_EQ(c.activation, FfnActivation::kGeluTanh);
  EXPECT_TRUE(c.post_norms);
  EXPECT_FLOAT_EQ(c.embedding_scale, std::sqrt(2304.0f));
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f / 16.0f);
  EXPECT_FLOAT_EQ(c.attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_EQ(c.sliding_window, 4096);
  ASSERT_EQ(c.layer_is_swa.size(), 26u);
  for (int32_t l = 0; l < 26; ++l) EXPECT_EQ(c.is_swa_layer(l), l % 2 == 0) << l;
  EXPECT_EQ(c.head_dim, 256);
  // What gen-model writes reads back the same.
  auto again = parse_hf_config(hf_config_json(*h), "again.json");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->config.layer_is_swa, c.layer_is_swa);
  EXPECT_FLOAT_EQ(again->config.attention_scale, c.attention_scale);
  EXPECT_FLOAT_EQ(again->config.attn_softcap, c.attn_softcap);
  EXPECT_FLOAT_EQ(again->config.final_softcap, c.final_softcap);
}

TEST(ArchitectureTest, Gemma3HasALocalRopeBaseQkNormAndFiveWindowedLayersPerFullOne) {
  auto h = parse_hf_config(R"({"architectures": ["Gemma3ForCausalLM"], "head_dim": 256, "hidden_size": 1152,
    "intermediate_size": 6912, "max_position_embeddings": 32768, "num_attention_heads": 4, "num_hidden_layers": 26,
    "num_key_value_heads": 1, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
    "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
    "final_logit_softcapping": null, "vocab_size": 262144, "hidden_activation": "gelu_pytorch_tanh"})",
                           "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.architecture, "gemma3");
  EXPECT_TRUE(h->qk_norm);
  EXPECT_FLOAT_EQ(c.final_softcap, 0.0f);
  EXPECT_FLOAT_EQ(c.attn_softcap, 0.0f);
  EXPECT_EQ(c.sliding_window, 512);
  for (int32_t l = 0; l < 26; ++l) EXPECT_EQ(c.is_swa_layer(l), l % 6 != 5) << l;
  EXPECT_FLOAT_EQ(c.rope_theta, 1000000.0f);
  EXPECT_FLOAT_EQ(c.rope_theta_swa, 10000.0f);
  EXPECT_FLOAT_EQ(c.rope_freq_scale_swa, 1.0f);

  // Gemma 3 4B and up: linear scaling of the full layers only.
  auto scaled = parse_hf_config(R"({"architectures": ["Gemma3ForCausalLM"], "head_dim": 32, "hidden_size": 64,
    "intermediate_size": 96, "max_position_embeddings": 131072, "num_attention_heads": 2, "num_hidden_layers": 6,
    "num_key_value_heads": 1, "rope_local_base_freq": 10000, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
    "rope_theta": 1000000, "sliding_window": 1024, "vocab_size": 300})",
                                "config.json");
  ASSERT_TRUE(scaled.ok()) << scaled.error();
  EXPECT_FLOAT_EQ(scaled->config.rope_freq_scale, 0.125f);
  EXPECT_FLOAT_EQ(scaled->config.rope_freq_scale_swa, 1.0f);
}

TEST(ArchitectureTest, Phi3LongRopeReadsBothFactorSetsAndTheAttentionFactor) {
  std::string factors;
  for (int i = 0; i < 48; ++i) factors += (i ? ", " : "") + std::to_string(1.0 + 0.1 * i);
  auto h = parse_hf_config(R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
    "sliding_window": 262144, "vocab_size": 32064, "rope_scaling": {"type": "longrope", "long_factor": [)" +
                               factors + R"(], "short_factor": [)" + factors + R"(]}})",
                           "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.architecture, "phi3");
  EXPECT_TRUE(c.rope_neox);
  EXPECT_EQ(c.rope_dim, 96);
  EXPECT_EQ(c.rope_original_context, 4096);
  ASSERT_EQ(c.rope_long_factors.size(), 48u);
  EXPECT_FLOAT_EQ(c.rope_long_factors[47], 5.7f);
  // HF's Phi3LongRoPEScaledRotaryEmbedding: sqrt(1 + ln(131072 / 4096) / ln(4096)).
  EXPECT_NEAR(c.rope_attn_factor, std::sqrt(1.0 + std::log(32.0) / std::log(4096.0)), 1e-6);

  auto partial = parse_hf_config(R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 64,
    "intermediate_size": 96, "max_position_embeddings": 256, "num_attention_heads": 4, "num_hidden_layers": 1,
    "num_key_value_heads": 2, "vocab_size": 300, "partial_rotary_factor": 0.75})",
                                 "config.json");
  ASSERT_TRUE(partial.ok()) << partial.error();
  EXPECT_EQ(partial->config.rope_dim, 12);  // 3/4 of each 16-wide head
  EXPECT_EQ(partial->config.head_dim, 16);
}

TEST(ArchitectureTest, YarnRopeScalingReadsFactorOriginalContextAndBetas) {
  // Qwen3's published YaRN setting, and transformers' newer rope_parameters spelling with the base inside.
  auto h = parse_hf_config(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 300, "max_position_embeddings": 40960,
    "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}})",
                           "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h->config.rope_scaling, RopeScalingType::kYarn);
  EXPECT_FLOAT_EQ(h->config.rope_freq_scale, 0.25f);
  EXPECT_EQ(h->config.rope_original_context, 32768);
  EXPECT_EQ(h->config.yarn_beta_fast, 32.0f);
  EXPECT_EQ(h->config.yarn_beta_slow, 1.0f);
  EXPECT_EQ(h->config.yarn_log_multiplier, 0.0f);  // mscale_all_dim is read for Ministral 3 only, as llama.cpp does
  auto again = parse_hf_config(hf_config_json(*h), "again.json");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->config.rope_scaling, RopeScalingType::kYarn);
  EXPECT_EQ(again->config.rope_original_context, 32768);

  auto m = parse_hf_config(R"({"architectures": ["Ministral3ForCausalLM"], "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 300,
    "max_position_embeddings": 262144, "rope_parameters": {"rope_type": "yarn", "factor": 16.0,
    "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
    "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.1, "rope_theta": 1000000.0}})",
                           "config.json");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->config.architecture, "mistral3");
  EXPECT_TRUE(m->permute_qk);
  EXPECT_EQ(m->config.rope_theta, 1000000.0f);
  EXPECT_FLOAT_EQ(m->config.rope_freq_scale, 1.0f / 16.0f);
  EXPECT_EQ(m->config.rope_original_context, 16384);
  EXPECT_EQ(m->config.yarn_log_multiplier, 1.0f);
  EXPECT_FLOAT_EQ(m->config.attn_temperature_scale, 0.1f);
  auto m2 = parse_hf_config(hf_config_json(*m), "again.json");
  ASSERT_TRUE(m2.ok()) << m2.error();
  EXPECT_FLOAT_EQ(m2->config.attn_temperature_scale, 0.1f);
  EXPECT_EQ(m2->config.yarn_log_multiplier, 1.0f);
}

TEST(ArchitectureTest, SmolLm3SkipsRopeOnEveryFourthLayerAndOlmo2HasOnlyPostNorms) {
  auto s = parse_hf_config(R"({"architectures": ["SmolLM3ForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
    "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0], "no_rope_layer_interval": 4})",
                           "config.json");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->config.architecture, "smollm3");
  EXPECT_TRUE(s->permute_qk);
  EXPECT_EQ(s->config.layer_skips_rope, (std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_TRUE(s->config.skips_rope(7));
  EXPECT_FALSE(s->config.skips_rope(6));

  auto o = parse_hf_config(R"({"architectures": ["Olmo2ForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300})",
                           "config.json");
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->config.architecture, "olmo2");
  EXPECT_TRUE(o->config.rope_neox);
  EXPECT_FALSE(o->permute_qk);
  EXPECT_FALSE(o->config.pre_norms);
  EXPECT_TRUE(o->config.post_norms);
  EXPECT_TRUE(o->config.qk_norm_whole);
  std::vector<HfTensor> tensors;
  find_hf_family("Olmo2ForCausalLM")->layer_tensors(*o, 0, tensors);
  std::vector<std::string> names;
  for (const HfTensor& t : tensors) names.push_back(t.gguf_name);
  EXPECT_THAT(names, ::testing::Contains("blk.0.attn_q_norm.weight"));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("blk.0.attn_norm.weight")));
  for (const HfTensor& t : tensors) {
    if (t.gguf_name == "blk.0.attn_k_norm.weight") {
      EXPECT_EQ(t.shape, std::vector<int64_t>{32});  // kv_dim, not head_dim
    }
  }
}

TEST(ArchitectureTest, Exaone4WindowsThreeLayersOfFourAndRunsItsFullLayersWithoutRope) {
  auto e = parse_hf_config(R"({"architectures": ["Exaone4ForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
    "sliding_window": 16, "sliding_window_pattern": "LLLG"})",
                           "config.json");
  ASSERT_TRUE(e.ok()) << e.error();
  const ModelConfig& c = e->config;
  EXPECT_EQ(c.architecture, "exaone4");
  EXPECT_FALSE(e->permute_qk);
  EXPECT_FALSE(c.pre_norms);
  EXPECT_TRUE(c.post_norms);
  EXPECT_FALSE(c.qk_norm_whole);
  EXPECT_EQ(c.sliding_window, 16);
  EXPECT_EQ(c.layer_is_swa, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(c.layer_skips_rope, (std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 1}));
  auto again = parse_hf_config(hf_config_json(*e), "again.json");  // written back as layer_types
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->config.layer_skips_rope, c.layer_skips_rope);
  // Without a window (EXAONE 4.0-1.2B) every layer rotates.
  auto small = parse_hf_config(R"({"architectures": ["Exaone4ForCausalLM"], "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 300,
    "sliding_window": null})",
                               "config.json");
  ASSERT_TRUE(small.ok()) << small.error();
  EXPECT_TRUE(small->config.layer_skips_rope.empty());
  EXPECT_FALSE(small->config.is_swa_layer(0));
}

TEST(ArchitectureTest, Olmo3WindowsThreeLayersOfFourWithPlainRope) {
  auto o = parse_hf_config(R"({"architectures": ["Olmo3ForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 300, "sliding_window": 4096,
    "max_position_embeddings": 65536, "rope_scaling": {"rope_type": "yarn", "factor": 8.0,
    "original_max_position_embeddings": 8192}})",
                           "config.json");
  ASSERT_TRUE(o.ok()) << o.error();
  const ModelConfig& c = o->config;
  EXPECT_EQ(c.architecture, "olmo2");
  EXPECT_EQ(c.layer_is_swa, (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_TRUE(c.rope_swa_plain);
  // The full layers take YaRN; the windowed ones rotate unscaled, magnitude 1.
  const RopeParams full = rope_params(c, false), windowed = rope_params(c, true);
  EXPECT_EQ(full.ext_factor, 1.0f);
  EXPECT_FLOAT_EQ(full.freq_scale, 0.125f);
  EXPECT_EQ(windowed.ext_factor, 0.0f);
  EXPECT_EQ(windowed.freq_scale, 1.0f);
  EXPECT_EQ(windowed.attn_factor, 1.0f);
  EXPECT_EQ(windowed.theta, c.rope_theta);
}

TEST(ArchitectureTest, GraniteReadsItsFourMultipliers) {
  auto h = parse_hf_config(R"({"architectures": ["GraniteForCausalLM"], "attention_multiplier": 0.015625,
    "embedding_multiplier": 12.0, "hidden_size": 2048, "intermediate_size": 8192, "logits_scaling": 8.0,
    "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
    "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": true,
    "vocab_size": 49155})",
                           "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.architecture, "granite");
  EXPECT_TRUE(h->permute_qk);
  EXPECT_FLOAT_EQ(c.embedding_scale, 12.0f);
  EXPECT_FLOAT_EQ(c.attention_scale, 0.015625f);
  EXPECT_FLOAT_EQ(c.residual_scale, 0.22f);
  EXPECT_FLOAT_EQ(c.logit_scale, 8.0f);
}

TEST(ArchitectureTest, MoeConfigsReadTheirExperts) {
  auto mixtral = parse_hf_config(R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
    "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 1e6, "sliding_window": null, "vocab_size": 32000})",
                                 "config.json");
  ASSERT_TRUE(mixtral.ok()) << mixtral.error();
  EXPECT_EQ(mixtral->config.architecture, "llama");
  EXPECT_EQ(mixtral->config.num_experts, 8);
  EXPECT_EQ(mixtral->config.num_experts_used, 2);
  EXPECT_EQ(mixtral->config.expert_hidden_dim, 14336);
  EXPECT_TRUE(mixtral->config.expert_weights_norm);
  EXPECT_EQ(mixtral->config.sliding_window, 0);

  auto qwen = parse_hf_config(R"({"architectures": ["Qwen3MoeForCausalLM"], "decoder_sparse_step": 1,
    "head_dim": 128, "hidden_size": 2048, "intermediate_size": 6144, "max_position_embeddings": 40960,
    "mlp_only_layers": [], "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32,
    "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "vocab_size": 151936})",
                              "config.json");
  ASSERT_TRUE(qwen.ok()) << qwen.error();
  EXPECT_EQ(qwen->config.architecture, "qwen3moe");
  EXPECT_TRUE(qwen->qk_norm);
  EXPECT_EQ(qwen->config.num_experts, 128);
  EXPECT_EQ(qwen->config.num_experts_used, 8);
  EXPECT_EQ(qwen->config.expert_hidden_dim, 768);
  EXPECT_EQ(qwen->config.max_hidden_dim(), 6144);
  EXPECT_TRUE(qwen->config.expert_weights_norm);
  EXPECT_EQ(qwen->config.shared_expert_hidden_dim, 0);
  EXPECT_EQ(mixtral->config.shared_expert_hidden_dim, 0);
}

// Qwen1.5-MoE-A2.7B's config.json: 60 experts of 1408, 4 per token, not renormalized; a gated shared expert of 5632.
const char* const kQwen15Moe = R"({"architectures": ["Qwen2MoeForCausalLM"], "decoder_sparse_step": 1,
  "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 5632, "max_position_embeddings": 8192,
  "max_window_layers": 21, "model_type": "qwen2_moe", "moe_intermediate_size": 1408, "norm_topk_prob": false,
  "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
  "num_key_value_heads": 16, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "shared_expert_intermediate_size": 5632,
  "sliding_window": 32768, "tie_word_embeddings": false, "use_sliding_window": false, "vocab_size": 151936,
  "bos_token_id": 151643, "eos_token_id": 151643})";

TEST(ArchitectureTest, Qwen2MoeReadsItsExpertsAndTheGatedSharedExpert) {
  auto h = parse_hf_config(kQwen15Moe, "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.architecture, "qwen2moe");
  EXPECT_TRUE(c.rope_neox);
  EXPECT_TRUE(h->qkv_bias);
  EXPECT_FALSE(h->qk_norm);
  EXPECT_EQ(c.num_experts, 60);
  EXPECT_EQ(c.num_experts_used, 4);
  EXPECT_EQ(c.expert_hidden_dim, 1408);
  EXPECT_FALSE(c.expert_weights_norm);
  EXPECT_EQ(c.shared_expert_hidden_dim, 5632);
  EXPECT_TRUE(c.shared_expert_gated);
  EXPECT_EQ(c.ffn_width(), 5632);
  // What gen-model writes reads back the same.
  auto again = parse_hf_config(hf_config_json(*h), "again.json");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->config.shared_expert_hidden_dim, 5632);
  EXPECT_TRUE(again->config.shared_expert_gated);
  EXPECT_FALSE(again->config.expert_weights_norm);
  EXPECT_TRUE(again->qkv_bias);
  EXPECT_EQ(again->config.num_experts, 60);

  // Its layer tensors: the routed experts stacked, then the shared expert's three matrices and its [1, dim] gate,
  // stored f32.
  std::vector<HfTensor> layer;
  find_hf_family("Qwen2MoeForCausalLM")->layer_tensors(*h, 3, layer);
  auto named = [&](const std::string& gguf) -> const HfTensor* {
    for (const HfTensor& t : layer)
      if (t.gguf_name == gguf) return &t;
    return nullptr;
  };
  ASSERT_NE(named("blk.3.attn_q.bias"), nullptr);
  ASSERT_NE(named("blk.3.ffn_gate_exps.weight"), nullptr);
  EXPECT_EQ(named("blk.3.ffn_gate_exps.weight")->hf_slices.size(), 60u);
  const HfTensor* gate = named("blk.3.ffn_gate_inp_shexp.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->hf_name, "model.layers.3.mlp.shared_expert_gate.weight");
  EXPECT_EQ(gate->shape, (std::vector<int64_t>{1, 2048}));
  EXPECT_EQ(gate->rewrite, HfTensor::Rewrite::kToF32);
  const HfTensor* down = named("blk.3.ffn_down_shexp.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->hf_name, "model.layers.3.mlp.shared_expert.down_proj.weight");
  EXPECT_EQ(down->shape, (std::vector<int64_t>{2048, 5632}));
  ASSERT_NE(named("blk.3.ffn_gate_shexp.weight"), nullptr);
  ASSERT_NE(named("blk.3.ffn_up_shexp.weight"), nullptr);

  // The other MoE families have no shared expert tensors.
  auto mixtral = parse_hf_config(R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 64,
    "intermediate_size": 96, "num_attention_heads": 4, "num_hidden_layers": 1, "num_local_experts": 4,
    "num_experts_per_tok": 2, "vocab_size": 300})",
                                 "config.json");
  ASSERT_TRUE(mixtral.ok()) << mixtral.error();
  layer.clear();
  find_hf_family("MixtralForCausalLM")->layer_tensors(*mixtral, 0, layer);
  for (const HfTensor& t : layer) EXPECT_EQ(t.gguf_name.find("shexp"), std::string::npos) << t.gguf_name;
}

TEST(ArchitectureTest, BadFamilyFieldsNameTheFileAndField) {
  const std::string base = R"("hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 256)";
  struct Case {
    std::string json, message;
  };
  const std::vector<Case> cases = {
      {R"({"architectures": ["MixtralForCausalLM"], )" + base + R"(, "num_local_experts": 4,
        "num_experts_per_tok": 5})",
       "cfg.json: num_experts_per_tok must be an integer in 1..4, got 5"},
      {R"({"architectures": ["MixtralForCausalLM"], )" + base + R"(, "num_local_experts": 100000,
        "num_experts_per_tok": 2})",
       "cfg.json: num_local_experts must be an integer in 1..512"},
      {R"({"architectures": ["GraniteForCausalLM"], )" + base + R"(, "mlp_bias": true})",
       "cfg.json: mlp_bias: true is not supported"},
      {R"({"architectures": ["GraniteForCausalLM"], )" + base + R"(, "residual_multiplier": -1})",
       "cfg.json: residual_multiplier"},
      {R"({"architectures": ["Gemma2ForCausalLM"], )" + base + R"(, "hidden_activation": "relu"})",
       "cfg.json: hidden_activation \"relu\" is not supported"},
      {R"({"architectures": ["Gemma2ForCausalLM"], )" + base + R"(, "tie_word_embeddings": false})",
       "cfg.json: tie_word_embeddings must be true for Gemma"},
      {R"({"architectures": ["Gemma3ForCausalLM"], )" + base + R"(, "sliding_window": 16,
        "layer_types": ["sliding_attention"]})",
       "cfg.json: layer_types has 1 entries for 2 layers"},
      {R"({"architectures": ["Phi3ForCausalLM"], )" + base + R"(, "rope_scaling": {"type": "longrope",
        "long_factor": [1, 2], "short_factor": [1, 2]}})",
       "cfg.json: rope_scaling.long_factor"},
      {R"({"architectures": ["Qwen3MoeForCausalLM"], )" + base + R"(, "num_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "mlp_only_layers": [0]})",
       "cfg.json: dense layers between the expert layers"},
      {R"({"architectures": ["Qwen2MoeForCausalLM"], )" + base + R"(, "num_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32})",
       "cfg.json: missing field shared_expert_intermediate_size"},
      {R"({"architectures": ["Qwen2MoeForCausalLM"], )" + base + R"(, "num_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "shared_expert_intermediate_size": 0})",
       "cfg.json: shared_expert_intermediate_size must be an integer in 1.."},
      {R"({"architectures": ["Qwen2MoeForCausalLM"], )" + base + R"(, "num_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64, "decoder_sparse_step": 2})",
       "cfg.json: dense layers between the expert layers"},
      {R"({"architectures": ["SmolLM3ForCausalLM"], )" + base + R"(, "no_rope_layers": [0, 1]})",
       "cfg.json: no_rope_layers must be 1 for each RoPE layer and 0 for every 4th"},
      {R"({"architectures": ["Exaone4ForCausalLM"], )" + base + R"(, "sliding_window": 16,
        "sliding_window_pattern": "LXG"})",
       "cfg.json: sliding_window_pattern \"LXG\" must be letters L and G"},
      {R"({"architectures": ["Olmo2ForCausalLM"], )" + base + R"(, "sliding_window": 4096})",
       "cfg.json: sliding_window is OLMo 3's (Olmo3ForCausalLM), not OLMo 2's"},
      {R"({"architectures": ["Qwen3ForCausalLM"], )" + base + R"(, "rope_scaling": {"rope_type": "yarn",
        "factor": 4, "beta_fast": 1, "beta_slow": 32}})",
       "cfg.json: rope_scaling: rope.scaling.yarn_beta_fast 1 must exceed yarn_beta_slow 32"},
      {R"({"architectures": ["Qwen3ForCausalLM"], )" + base + R"(, "rope_scaling": {"rope_type": "dynamic",
        "factor": 4}})",
       "cfg.json: rope_scaling type \"dynamic\" is not supported"},
  };
  for (const Case& c : cases) {
    auto h = parse_hf_config(c.json, "cfg.json");
    ASSERT_FALSE(h.ok()) << c.json;
    EXPECT_THAT(h.error(), HasSubstr(c.message)) << c.json;
  }
}

}  // namespace
}  // namespace pagoda
