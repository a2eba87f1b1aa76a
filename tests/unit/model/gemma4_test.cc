// Gemma 4 (model/arch_gemma4.cc): config.json read as the published E2B config says (two head sizes, proportional
// RoPE on the full layers, the K/V-sharing last layers and their double-wide FFNs, per-layer embeddings), the layer ->
// KV-layer mapping that keeps the sharing layers out of the cache, the tensor list, what gen-model writes reading
// back the same, the MoE size's config (26B-A4B's fields) and tensors, and the sizes not supported yet refused by name. The forward pass is checked end to end against
// llama.cpp in tests/e2e/cli_model_families_test.cc (tiny-gemma4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/hf_config.h"
#include "model/model_config.h"
#include "model/rope_tables.h"

namespace pagoda {
namespace {

using ::testing::HasSubstr;

// Gemma-4-E2B's text config, as its fields read (layer_types as the sliding_window_pattern of 5 they follow).
std::string e2b_config(const std::string& extra = "") {
  return R"({"architectures": ["Gemma4ForCausalLM"], "hidden_size": 1536, "intermediate_size": 6144,
    "num_hidden_layers": 35, "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
    "global_head_dim": 512, "vocab_size": 262144, "vocab_size_per_layer_input": 262144,
    "hidden_size_per_layer_input": 256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-06,
    "sliding_window": 512, "sliding_window_pattern": 5, "num_kv_shared_layers": 20, "use_double_wide_mlp": true,
    "final_logit_softcapping": 30.0, "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true,
    "attention_k_eq_v": false, "enable_moe_block": false,
    "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
      "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}})" +
         extra + "}";
}

TEST(Gemma4Test, E2bConfigHasTwoHeadSizesProportionalRopeAndSharedKvLayers) {
  auto h = parse_hf_config(e2b_config(), "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.architecture, "gemma4");
  EXPECT_FALSE(h->norms_plus_one);  // Gemma 4's RMSNorm scales by w, not 1 + w
  EXPECT_TRUE(h->tie_word_embeddings);
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f);
  EXPECT_TRUE(c.v_norm);
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_EQ(c.per_layer_input_dim, 256);
  // Windowed layers: head 256, RoPE over all of it, base 10000; full layers (every fifth): head 512, base 1M.
  for (int32_t l = 0; l < 35; ++l) {
    EXPECT_EQ(c.is_swa_layer(l), l % 5 != 4) << l;
    EXPECT_EQ(c.layer_head_dim(l), c.is_swa_layer(l) ? 256 : 512) << l;
    EXPECT_EQ(c.layer_rope_dim(l), c.is_swa_layer(l) ? 256 : 512) << l;
    EXPECT_EQ(c.layer_q_dim(l), 8 * c.layer_head_dim(l)) << l;
  }
  EXPECT_FLOAT_EQ(c.rope_theta, 1000000.0f);
  EXPECT_FLOAT_EQ(c.rope_theta_swa, 10000.0f);
  // Proportional RoPE: a quarter of the full head's 256 pairs rotate; the others get llama.cpp's divisor of 1e30.
  ASSERT_EQ(c.rope_freq_factors.size(), 256u);
  for (size_t i = 0; i < 256; ++i) EXPECT_FLOAT_EQ(c.rope_freq_factors[i], i < 64 ? 1.0f : 1e30f) << i;
  // The last 20 layers read the K/V of layer 13 (windowed) or 14 (full), and have FFNs twice as wide.
  EXPECT_EQ(c.num_kv_layers(), 15);
  for (int32_t l = 0; l < 35; ++l) {
    EXPECT_EQ(c.writes_kv(l), l < 15) << l;
    EXPECT_EQ(c.kv_layer(l), l < 15 ? l : (c.is_swa_layer(l) ? 13 : 14)) << l;
    EXPECT_EQ(c.layer_hidden_dim(l), l < 15 ? 6144 : 12288) << l;
  }
  EXPECT_EQ(c.hidden_dim, 12288);
  // The cache holds the 15 K/V layers only, each row as wide as the widest layer's.
  const KvShape kv = c.kv_shape();
  EXPECT_EQ(kv.num_layers, 15);
  EXPECT_EQ(kv.kv_dim, 512);
  EXPECT_EQ(kv.num_kv_heads, 1);
}

// The one K/V map of both kinds of K/V-less layer: LFM2's conv layers (their state at conv_layers_before) and
// Gemma 4's sharing layers; the cache holds only the attention layers that write their own K/V.
TEST(Gemma4Test, KvLayerMapSkipsConvLayersAndSharingLayersAlike) {
  ModelConfig c;
  c.num_layers = 8;
  c.num_heads = c.num_kv_heads = 2;
  c.head_dim = 8;
  c.sliding_window = 16;
  c.layer_is_conv = {1, 0, 1, 0, 0, 0, 0, 0};  // conv, swa, conv, full, swa | shared: swa, full, swa
  c.layer_is_swa = {0, 1, 0, 0, 1, 1, 0, 1};
  c.num_kv_shared_layers = 3;
  EXPECT_EQ(c.num_attention_layers(), 6);
  EXPECT_EQ(c.num_kv_layers(), 3);
  EXPECT_EQ(c.kv_shape().num_layers, 3);
  const bool writes[] = {false, true, false, true, true, false, false, false};
  const int32_t reads[] = {-1, 0, -1, 1, 2, 2, 1, 2};
  for (int32_t l = 0; l < 8; ++l) {
    EXPECT_EQ(c.writes_kv(l), writes[l]) << l;
    EXPECT_EQ(c.kv_layer(l), reads[l]) << l;
  }
  EXPECT_EQ(c.conv_layers_before(0), 0);
  EXPECT_EQ(c.conv_layers_before(2), 1);
}

TEST(Gemma4Test, RopeTablesGiveEachLayerKindItsOwnDimsBaseAndDivisors) {
  auto h = parse_hf_config(e2b_config(), "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  const RopeParams full = rope_params(c, false), swa = rope_params(c, true);
  EXPECT_EQ(full.rope_dim, 512);
  EXPECT_TRUE(full.frequency_divisors);
  EXPECT_EQ(swa.rope_dim, 256);
  EXPECT_FALSE(swa.frequency_divisors);
  const std::vector<Pos> positions{100};
  std::vector<float> cs(256), sn(256);
  fill_rope_tables(c, positions, full, 1024, cs.data(), sn.data());
  EXPECT_NE(sn[0], 0.0f);       // pair 0 rotates
  EXPECT_FLOAT_EQ(cs[200], 1.0f);  // pair 200 of the full head does not
  EXPECT_NEAR(sn[200], 0.0f, 1e-20f);
  fill_rope_tables(c, positions, swa, 1024, cs.data(), sn.data());
  // The windowed layers' pair 100 of 128: 100 * 10000^(-200/256), no divisor.
  EXPECT_NEAR(sn[100], std::sin(100.0f * std::pow(10000.0f, -200.0f / 256.0f)), 1e-5f);
}

TEST(Gemma4Test, SharingLayersHaveNoKvTensorsAndEveryLayerItsPerLayerInputAndScale) {
  auto h = parse_hf_config(e2b_config(), "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const HfFamily* family = find_hf_family("Gemma4ForCausalLM");
  ASSERT_NE(family, nullptr);
  auto names = [&](int32_t layer) {
    std::vector<HfTensor> out;
    family->layer_tensors(*h, layer, out);
    std::vector<std::string> n;
    for (const HfTensor& t : out) n.push_back(t.gguf_name);
    return n;
  };
  using ::testing::Contains;
  using ::testing::Not;
  EXPECT_THAT(names(14), Contains("blk.14.attn_k.weight"));
  EXPECT_THAT(names(14), Contains("blk.14.attn_k_norm.weight"));
  EXPECT_THAT(names(15), Not(Contains("blk.15.attn_k.weight")));
  EXPECT_THAT(names(15), Not(Contains("blk.15.attn_v.weight")));
  EXPECT_THAT(names(15), Not(Contains("blk.15.attn_k_norm.weight")));
  for (const char* t : {"blk.15.inp_gate.weight", "blk.15.proj.weight", "blk.15.post_norm.weight",
                        "blk.15.layer_output_scale.weight"})
    EXPECT_THAT(names(15), Contains(t));
  std::vector<HfTensor> model;
  family->model_tensors(*h, model);
  ASSERT_EQ(model.size(), 3u);
  EXPECT_EQ(model[0].gguf_name, "per_layer_token_embd.weight");
  EXPECT_EQ(model[0].shape, (std::vector<int64_t>{262144, 35 * 256}));
}

TEST(Gemma4Test, WrittenConfigReadsBackTheSame) {
  auto h = parse_hf_config(e2b_config(), "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  auto back = parse_hf_config(hf_config_json(*h), "written.json");
  ASSERT_TRUE(back.ok()) << back.error();
  const ModelConfig &a = h->config, &b = back->config;
  EXPECT_EQ(b.head_dim, a.head_dim);
  EXPECT_EQ(b.head_dim_swa, a.head_dim_swa);
  EXPECT_EQ(b.layer_is_swa, a.layer_is_swa);
  EXPECT_EQ(b.layer_hidden_dims, a.layer_hidden_dims);
  EXPECT_EQ(b.num_kv_shared_layers, a.num_kv_shared_layers);
  EXPECT_EQ(b.per_layer_input_dim, a.per_layer_input_dim);
  EXPECT_EQ(b.rope_freq_factors, a.rope_freq_factors);
  EXPECT_FLOAT_EQ(b.rope_theta, a.rope_theta);
  EXPECT_FLOAT_EQ(b.rope_theta_swa, a.rope_theta_swa);
  EXPECT_FLOAT_EQ(b.final_softcap, a.final_softcap);
}

// Gemma-4-26B-A4B's text fields that pagoda runs (its K-as-V full layers with their own KV-head count aside): every
// layer's 128 experts of 704, 8 a token, beside a dense FFN of 2112.
std::string moe_config() {
  return R"({"architectures": ["Gemma4ForCausalLM"], "hidden_size": 2816, "intermediate_size": 2112,
    "num_hidden_layers": 30, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
    "global_head_dim": 512, "vocab_size": 262144, "hidden_size_per_layer_input": 0, "max_position_embeddings": 262144,
    "rms_norm_eps": 1e-06, "sliding_window": 1024, "sliding_window_pattern": 6, "num_kv_shared_layers": 0,
    "use_double_wide_mlp": false, "final_logit_softcapping": 30.0, "hidden_activation": "gelu_pytorch_tanh",
    "tie_word_embeddings": true, "enable_moe_block": true, "num_experts": 128, "top_k_experts": 8,
    "moe_intermediate_size": 704,
    "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
      "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}})";
}

TEST(Gemma4Test, MoeConfigPutsExpertsBesideTheDenseFfnWithLlamaCppsRouting) {
  auto h = parse_hf_config(moe_config(), "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_used, 8);
  EXPECT_EQ(c.expert_hidden_dim, 704);
  EXPECT_EQ(c.hidden_dim, 2112);
  EXPECT_TRUE(c.moe_beside_dense_ffn);
  EXPECT_TRUE(c.expert_weights_norm);  // the top-k softmax weights renormalized, as build_moe_ffn's norm_w
  EXPECT_FALSE(c.expert_softmax_after_topk);
  EXPECT_EQ(c.shared_expert_hidden_dim, 0);  // the dense FFN is not a shared expert on the experts' input
  for (int32_t l = 0; l < 30; ++l) EXPECT_EQ(c.is_swa_layer(l), l % 6 != 5) << l;
  // Every layer: the dense FFN and its norm, the router with its input scale and per-expert output scale, gate and
  // up stacked, down, and the branches' three norms.
  const HfFamily* family = find_hf_family("Gemma4ForCausalLM");
  ASSERT_NE(family, nullptr);
  std::vector<HfTensor> out;
  family->layer_tensors(*h, 3, out);
  auto shape_of = [&](const std::string& gguf) {
    for (const HfTensor& t : out)
      if (t.gguf_name == gguf) return t.shape;
    return std::vector<int64_t>{};
  };
  EXPECT_EQ(shape_of("blk.3.ffn_gate.weight"), (std::vector<int64_t>{2112, 2816}));
  EXPECT_EQ(shape_of("blk.3.ffn_gate_inp.weight"), (std::vector<int64_t>{128, 2816}));
  EXPECT_EQ(shape_of("blk.3.ffn_gate_inp.scale"), (std::vector<int64_t>{2816}));
  EXPECT_EQ(shape_of("blk.3.ffn_down_exps.scale"), (std::vector<int64_t>{128}));
  EXPECT_EQ(shape_of("blk.3.ffn_gate_up_exps.weight"), (std::vector<int64_t>{128, 2 * 704, 2816}));
  EXPECT_EQ(shape_of("blk.3.ffn_down_exps.weight"), (std::vector<int64_t>{128, 2816, 704}));
  for (const char* norm : {"blk.3.pre_ffw_norm_2.weight", "blk.3.post_ffw_norm_1.weight", "blk.3.post_ffw_norm_2.weight",
                           "blk.3.ffn_norm.weight", "blk.3.post_ffw_norm.weight"})
    EXPECT_EQ(shape_of(norm), (std::vector<int64_t>{2816})) << norm;
  bool found = false;
  for (const HfTensor& t : out) found |= t.hf_name == "model.layers.3.experts.gate_up_proj";
  EXPECT_TRUE(found);
  // Written back, the same experts.
  auto back = parse_hf_config(hf_config_json(*h), "written.json");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->config.num_experts, 128);
  EXPECT_EQ(back->config.num_experts_used, 8);
  EXPECT_EQ(back->config.expert_hidden_dim, 704);
  EXPECT_TRUE(back->config.moe_beside_dense_ffn);
}

// The 26B-A4B's and 31B's full layers: 2 KV heads of 512 (the windowed ones 8 of 256), and K's projection as V (no
// v_proj); the cache rows as wide as the widest layer's K/V.
TEST(Gemma4Test, FullLayersTakeTheirOwnKvHeadCountAndKAsV) {
  std::string text = moe_config();
  text.insert(text.size() - 1, R"(, "num_global_key_value_heads": 2, "attention_k_eq_v": true)");
  auto h = parse_hf_config(text, "config.json");
  ASSERT_TRUE(h.ok()) << h.error();
  const ModelConfig& c = h->config;
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_TRUE(c.full_layers_v_is_k);
  for (int32_t l = 0; l < 30; ++l) {
    EXPECT_EQ(c.layer_num_kv_heads(l), c.is_swa_layer(l) ? 8 : 2) << l;
    EXPECT_EQ(c.layer_kv_dim(l), c.is_swa_layer(l) ? 8 * 256 : 2 * 512) << l;
    EXPECT_EQ(c.layer_v_is_k(l), !c.is_swa_layer(l)) << l;
  }
  EXPECT_EQ(c.kv_dim(), 2048);
  EXPECT_EQ(c.kv_shape().num_kv_heads, 8);
  const HfFamily* family = find_hf_family("Gemma4ForCausalLM");
  ASSERT_NE(family, nullptr);
  auto names = [&](int32_t layer) {
    std::vector<HfTensor> out;
    family->layer_tensors(*h, layer, out);
    std::vector<std::string> n;
    for (const HfTensor& t : out) n.push_back(t.gguf_name);
    return n;
  };
  using ::testing::Contains;
  using ::testing::Not;
  EXPECT_THAT(names(4), Contains("blk.4.attn_v.weight"));
  EXPECT_THAT(names(5), Contains("blk.5.attn_k.weight"));
  EXPECT_THAT(names(5), Not(Contains("blk.5.attn_v.weight")));
  auto back = parse_hf_config(hf_config_json(*h), "written.json");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->config.layer_kv_heads, c.layer_kv_heads);
  EXPECT_EQ(back->config.num_kv_heads, 8);
  EXPECT_TRUE(back->config.full_layers_v_is_k);
}

TEST(Gemma4Test, SizesNotSupportedYetAndImpossibleSharingAreRefusedByName) {
  // The MoE size needs its experts' sizes.
  auto moe = parse_hf_config(e2b_config(R"(, "enable_moe_block": true)"), "config.json");
  ASSERT_FALSE(moe.ok());
  EXPECT_THAT(moe.error(), HasSubstr("num_experts"));
  auto global_kv = parse_hf_config(e2b_config(R"(, "num_global_key_value_heads": 3)"), "config.json");
  ASSERT_FALSE(global_kv.ok());
  EXPECT_THAT(global_kv.error(), HasSubstr("num_global_key_value_heads"));
  // Sharing every layer leaves none to share from; a full layer among the sharing ones needs an earlier full one.
  auto all = parse_hf_config(e2b_config(R"(, "num_kv_shared_layers": 35)"), "config.json");
  ASSERT_FALSE(all.ok());
  EXPECT_THAT(all.error(), HasSubstr("KV-sharing"));
  auto no_full = parse_hf_config(e2b_config(R"(, "num_kv_shared_layers": 33)"), "config.json");
  ASSERT_FALSE(no_full.ok());
  EXPECT_THAT(no_full.error(), HasSubstr("full-attention"));
}

}  // namespace
}  // namespace pagoda
