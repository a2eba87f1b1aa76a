// llama.cpp's per-tensor type mixture (llama_quant_mixture.h), checked against the types llama-quantize itself
// chose for the same shapes (read from its output files: tinyllama-1.1b cut to 8 layers, stories15M's 288-wide
// rows, an untied and a tied embedding), and the tensor order it writes.
#include "format/llama_quant_mixture.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pagoda::format {
namespace {

std::vector<MixtureTensor> llama_tensors(int layers, int64_t dim, int64_t kv_dim, int64_t ffn, int64_t vocab,
                                         bool tied) {
  std::vector<MixtureTensor> t;
  t.push_back({"token_embd.weight", {dim, vocab}, GgmlType::kF16});
  t.push_back({"output_norm.weight", {dim}, GgmlType::kF32});
  if (!tied) t.push_back({"output.weight", {dim, vocab}, GgmlType::kF16});
  for (int l = 0; l < layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    t.push_back({b + "attn_norm.weight", {dim}, GgmlType::kF32});
    t.push_back({b + "attn_q.weight", {dim, dim}, GgmlType::kF16});
    t.push_back({b + "attn_k.weight", {dim, kv_dim}, GgmlType::kF16});
    t.push_back({b + "attn_v.weight", {dim, kv_dim}, GgmlType::kF16});
    t.push_back({b + "attn_output.weight", {dim, dim}, GgmlType::kF16});
    t.push_back({b + "ffn_norm.weight", {dim}, GgmlType::kF32});
    t.push_back({b + "ffn_gate.weight", {dim, ffn}, GgmlType::kF16});
    t.push_back({b + "ffn_up.weight", {dim, ffn}, GgmlType::kF16});
    t.push_back({b + "ffn_down.weight", {ffn, dim}, GgmlType::kF16});
  }
  return t;
}

std::vector<MixtureTensor> ordered(const std::vector<MixtureTensor>& t) {
  std::vector<MixtureTensor> out;
  for (size_t i : llama_tensor_order(t)) out.push_back(t[i]);
  return out;
}

GgmlType type_of(const std::vector<MixtureTensor>& t, const std::vector<GgmlType>& types, const std::string& name) {
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].name == name) return types[i];
  ADD_FAILURE() << name;
  return GgmlType::kF32;
}

TEST(LlamaQuantMixtureTest, ParsesLlamaQuantizeNamesInAnyCase) {
  EXPECT_EQ(parse_llama_file_type("Q4_K_M"), LlamaFileType::kQ4_K_M);
  EXPECT_EQ(parse_llama_file_type("q4_k_m"), LlamaFileType::kQ4_K_M);
  EXPECT_EQ(parse_llama_file_type("q8_0"), LlamaFileType::kQ8_0);
  EXPECT_EQ(parse_llama_file_type("q6_k"), LlamaFileType::kQ6_K);
  EXPECT_EQ(parse_llama_file_type("q3_k_m"), LlamaFileType::kQ3_K_M);
  EXPECT_EQ(parse_llama_file_type("Q2_K"), LlamaFileType::kQ2_K);
  EXPECT_FALSE(parse_llama_file_type("IQ2_XXS").has_value());
  EXPECT_FALSE(parse_llama_file_type("int8").has_value());
  EXPECT_EQ(llama_file_type_name(LlamaFileType::kQ5_K_M), "Q5_K_M");
}

TEST(LlamaQuantMixtureTest, OrdersOutsideTensorsFirstThenBlocksByNumber) {
  std::vector<MixtureTensor> t = {{"blk.10.attn_q.weight", {256, 256}, GgmlType::kF16},
                                  {"blk.2.ffn_up.weight", {256, 256}, GgmlType::kF16},
                                  {"token_embd.weight", {256, 8}, GgmlType::kF16},
                                  {"blk.2.attn_q.weight", {256, 256}, GgmlType::kF16},
                                  {"output.weight", {256, 8}, GgmlType::kF16}};
  std::vector<std::string> names;
  for (size_t i : llama_tensor_order(t)) names.push_back(t[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"output.weight", "token_embd.weight", "blk.2.attn_q.weight",
                                             "blk.2.ffn_up.weight", "blk.10.attn_q.weight"}));
}

// tinyllama-1.1b's shapes, 4 layers (32 heads over 4 KV heads): llama-quantize's Q2_K and Q3_K_S/M/L files.
TEST(LlamaQuantMixtureTest, Q2_KAndQ3_KTypesStepUpAsLlamaQuantizeDoes) {
  const auto t = ordered(llama_tensors(4, 2048, 256, 5632, 4096, false));
  const MixtureModelFacts facts{"llama", 4, 0, 32, 4};
  struct Expected {
    LlamaFileType file_type;
    GgmlType base, attn_v_first_two, attn_v_rest, attn_output, ffn_down;
  };
  const Expected cases[] = {
      {LlamaFileType::kQ2_K, GgmlType::kQ2_K, GgmlType::kQ4_K, GgmlType::kQ4_K, GgmlType::kQ3_K, GgmlType::kQ3_K},
      {LlamaFileType::kQ3_K_S, GgmlType::kQ3_K, GgmlType::kQ3_K, GgmlType::kQ3_K, GgmlType::kQ3_K, GgmlType::kQ3_K},
      {LlamaFileType::kQ3_K_M, GgmlType::kQ3_K, GgmlType::kQ5_K, GgmlType::kQ4_K, GgmlType::kQ4_K, GgmlType::kQ4_K},
      {LlamaFileType::kQ3_K_L, GgmlType::kQ3_K, GgmlType::kQ5_K, GgmlType::kQ5_K, GgmlType::kQ5_K, GgmlType::kQ5_K},
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE(std::string(llama_file_type_name(e.file_type)));
    auto types = llama_tensor_types(t, e.file_type, facts, false);
    ASSERT_TRUE(types.ok()) << types.error();
    EXPECT_EQ(type_of(t, *types, "output.weight"), GgmlType::kQ6_K);
    EXPECT_EQ(type_of(t, *types, "token_embd.weight"), e.base);
    for (int l = 0; l < 4; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      EXPECT_EQ(type_of(t, *types, b + "attn_v.weight"), l < 2 ? e.attn_v_first_two : e.attn_v_rest) << l;
      EXPECT_EQ(type_of(t, *types, b + "attn_output.weight"), e.attn_output) << l;
      EXPECT_EQ(type_of(t, *types, b + "ffn_down.weight"), e.ffn_down) << l;
      for (const char* same : {"attn_q.weight", "attn_k.weight", "ffn_gate.weight", "ffn_up.weight"})
        EXPECT_EQ(type_of(t, *types, b + same), e.base) << l << " " << same;
    }
  }
  // Fewer than 4 query heads per KV head: Q2_K's attn_v is q3_K.
  auto mha = llama_tensor_types(t, LlamaFileType::kQ2_K, MixtureModelFacts{"llama", 4, 0, 32, 32}, false);
  ASSERT_TRUE(mha.ok());
  EXPECT_EQ(type_of(t, *mha, "blk.0.attn_v.weight"), GgmlType::kQ3_K);
  // Rows that are not whole super-blocks fall back to q4_0.
  const std::vector<MixtureTensor> narrow = {{"blk.0.attn_q.weight", {288, 288}, GgmlType::kF16}};
  auto fallback = llama_tensor_types(narrow, LlamaFileType::kQ3_K_S, MixtureModelFacts{"llama", 1, 0, 6, 6}, false);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ((*fallback)[0], GgmlType::kQ4_0);
}

// IQ4_XS: attn_v q5_K with 4 or more query heads per KV head, the first eighth of ffn_down q5_K without an
// importance matrix, rows that are not whole super-blocks iq4_nl.
TEST(LlamaQuantMixtureTest, IQ4_XSStepsUpAttnVAndTheFirstFfnDown) {
  const auto t = ordered(llama_tensors(8, 2048, 256, 5632, 4096, false));
  const MixtureModelFacts facts{"llama", 8, 0, 32, 4};
  auto types = llama_tensor_types(t, LlamaFileType::kIQ4_XS, facts, false);
  ASSERT_TRUE(types.ok()) << types.error();
  EXPECT_EQ(type_of(t, *types, "output.weight"), GgmlType::kQ6_K);
  EXPECT_EQ(type_of(t, *types, "token_embd.weight"), GgmlType::kIQ4_XS);
  for (int l = 0; l < 8; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(type_of(t, *types, b + "attn_v.weight"), GgmlType::kQ5_K) << l;
    EXPECT_EQ(type_of(t, *types, b + "ffn_down.weight"), l == 0 ? GgmlType::kQ5_K : GgmlType::kIQ4_XS) << l;
    EXPECT_EQ(type_of(t, *types, b + "attn_output.weight"), GgmlType::kIQ4_XS) << l;
  }
  auto weighted = llama_tensor_types(t, LlamaFileType::kIQ4_XS, facts, true);
  ASSERT_TRUE(weighted.ok());
  EXPECT_EQ(type_of(t, *weighted, "blk.0.ffn_down.weight"), GgmlType::kIQ4_XS);
  const std::vector<MixtureTensor> narrow = {{"blk.0.attn_q.weight", {288, 288}, GgmlType::kF16}};
  auto fallback = llama_tensor_types(narrow, LlamaFileType::kIQ4_XS, MixtureModelFacts{"llama", 1, 0, 6, 6}, false);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ((*fallback)[0], GgmlType::kIQ4_NL);
}

// IQ4_NL: IQ4_XS's rules with 32-value blocks, so a row of 288 stays iq4_nl; a row that is not whole blocks of 32 is
// f16.
TEST(LlamaQuantMixtureTest, IQ4_NLFollowsIQ4_XSsRules) {
  EXPECT_EQ(parse_llama_file_type("iq4_nl"), LlamaFileType::kIQ4_NL);
  EXPECT_EQ(uint32_t(LlamaFileType::kIQ4_NL), 25u) << "llama.cpp's LLAMA_FTYPE_MOSTLY_IQ4_NL";
  const auto t = ordered(llama_tensors(8, 2048, 256, 5632, 4096, false));
  const MixtureModelFacts facts{"llama", 8, 0, 32, 4};
  auto types = llama_tensor_types(t, LlamaFileType::kIQ4_NL, facts, false);
  ASSERT_TRUE(types.ok()) << types.error();
  EXPECT_EQ(type_of(t, *types, "output.weight"), GgmlType::kQ6_K);
  EXPECT_EQ(type_of(t, *types, "token_embd.weight"), GgmlType::kIQ4_NL);
  for (int l = 0; l < 8; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(type_of(t, *types, b + "attn_v.weight"), GgmlType::kQ5_K) << l;
    EXPECT_EQ(type_of(t, *types, b + "ffn_down.weight"), l == 0 ? GgmlType::kQ5_K : GgmlType::kIQ4_NL) << l;
    EXPECT_EQ(type_of(t, *types, b + "attn_q.weight"), GgmlType::kIQ4_NL) << l;
  }
  auto weighted = llama_tensor_types(t, LlamaFileType::kIQ4_NL, facts, true);
  ASSERT_TRUE(weighted.ok());
  EXPECT_EQ(type_of(t, *weighted, "blk.0.ffn_down.weight"), GgmlType::kIQ4_NL);
  const std::vector<MixtureTensor> rows = {{"blk.0.attn_q.weight", {288, 288}, GgmlType::kF16},
                                           {"blk.0.attn_k.weight", {100, 288}, GgmlType::kF16}};
  auto fallback = llama_tensor_types(rows, LlamaFileType::kIQ4_NL, MixtureModelFacts{"llama", 1, 0, 6, 6}, false);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ((*fallback)[0], GgmlType::kIQ4_NL);
  EXPECT_EQ((*fallback)[1], GgmlType::kF16);
}

// tinyllama-1.1b's shapes, 8 layers: llama-quantize Q4_K_M gave attn_v and ffn_down q6_K in layers 0, 3, 6, 7
// (use_more_bits), q4_K elsewhere, output q6_K, token_embd q4_K, norms f32.
TEST(LlamaQuantMixtureTest, Q4_K_MStepsUpAttnVAndFfnDownInTheLlamaQuantizeLayers) {
  const auto t = ordered(llama_tensors(8, 2048, 256, 5632, 4096, false));
  const MixtureModelFacts facts{"llama", 8, 0, 32, 4};
  auto types = llama_tensor_types(t, LlamaFileType::kQ4_K_M, facts, false);
  ASSERT_TRUE(types.ok()) << types.error();
  EXPECT_EQ(type_of(t, *types, "output.weight"), GgmlType::kQ6_K);
  EXPECT_EQ(type_of(t, *types, "token_embd.weight"), GgmlType::kQ4_K);
  EXPECT_EQ(type_of(t, *types, "output_norm.weight"), GgmlType::kF32);
  for (int l = 0; l < 8; ++l) {
    const bool more = l == 0 || l == 3 || l == 6 || l == 7;
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(type_of(t, *types, b + "attn_v.weight"), more ? GgmlType::kQ6_K : GgmlType::kQ4_K) << l;
    EXPECT_EQ(type_of(t, *types, b + "ffn_down.weight"), more ? GgmlType::kQ6_K : GgmlType::kQ4_K) << l;
    EXPECT_EQ(type_of(t, *types, b + "attn_q.weight"), GgmlType::kQ4_K);
    EXPECT_EQ(type_of(t, *types, b + "ffn_up.weight"), GgmlType::kQ4_K);
  }
  auto q6 = llama_tensor_types(t, LlamaFileType::kQ6_K, facts, false);
  ASSERT_TRUE(q6.ok());
  for (size_t i = 0; i < t.size(); ++i)
    EXPECT_EQ((*q6)[i], t[i].dims.size() == 1 ? GgmlType::kF32 : GgmlType::kQ6_K) << t[i].name;
  // Q4_0: the output still q6_K, as llama-quantize gives it.
  auto q40 = llama_tensor_types(t, LlamaFileType::kQ4_0, facts, false);
  ASSERT_TRUE(q40.ok());
  EXPECT_EQ(type_of(t, *q40, "output.weight"), GgmlType::kQ6_K);
  EXPECT_EQ(type_of(t, *q40, "blk.0.ffn_down.weight"), GgmlType::kQ4_0);
  auto q40_imatrix = llama_tensor_types(t, LlamaFileType::kQ4_0, facts, true);
  ASSERT_TRUE(q40_imatrix.ok());
  EXPECT_EQ(type_of(t, *q40_imatrix, "blk.0.ffn_down.weight"), GgmlType::kQ4_1);
  EXPECT_EQ(type_of(t, *q40_imatrix, "blk.1.ffn_down.weight"), GgmlType::kQ4_0);
}

// stories15M's 288-wide rows are not whole super-blocks: q4_K falls back to q5_0, q6_K to q8_0, and a tied
// embedding takes the output's type.
TEST(LlamaQuantMixtureTest, FallsBackForRowsThatAreNotWholeSuperBlocks) {
  const auto t = ordered(llama_tensors(6, 288, 288, 768, 32000, true));
  const MixtureModelFacts facts{"llama", 6, 0, 6, 6};
  auto types = llama_tensor_types(t, LlamaFileType::kQ4_K_M, facts, false);
  ASSERT_TRUE(types.ok()) << types.error();
  EXPECT_EQ(type_of(t, *types, "token_embd.weight"), GgmlType::kQ8_0);  // tied: the output's q6_K -> q8_0
  EXPECT_EQ(type_of(t, *types, "blk.1.attn_q.weight"), GgmlType::kQ5_0);
  EXPECT_EQ(type_of(t, *types, "blk.1.ffn_down.weight"), GgmlType::kQ4_K);  // 768 = 3 super-blocks
  EXPECT_EQ(type_of(t, *types, "blk.2.attn_v.weight"), GgmlType::kQ8_0);   // more bits: q6_K -> q8_0
  EXPECT_EQ(type_of(t, *types, "blk.0.attn_v.weight"), GgmlType::kQ5_0);
  auto q5 = llama_tensor_types(t, LlamaFileType::kQ5_K_M, facts, false);
  ASSERT_TRUE(q5.ok());
  EXPECT_EQ(type_of(t, *q5, "blk.1.attn_q.weight"), GgmlType::kQ5_1);
  // Rows of 40: not even 32-value blocks, so f16.
  const std::vector<MixtureTensor> odd = {{"blk.0.attn_q.weight", {40, 40}, GgmlType::kF32}};
  auto f16 = llama_tensor_types(odd, LlamaFileType::kQ8_0, {"llama", 1, 0, 1, 1}, false);
  ASSERT_TRUE(f16.ok());
  EXPECT_EQ((*f16)[0], GgmlType::kF16);
}

TEST(LlamaQuantMixtureTest, MoeLayersComeFromTheNameAndBadOnesAreErrors) {
  std::vector<MixtureTensor> t = {{"blk.0.ffn_down_exps.weight", {256, 256, 8}, GgmlType::kF32},
                                  {"blk.0.ffn_gate_inp.weight", {256, 8}, GgmlType::kF32},
                                  {"blk.0.attn_v.weight", {256, 256}, GgmlType::kF32}};
  auto types = llama_tensor_types(ordered(t), LlamaFileType::kQ4_K_M, {"llama", 1, 8, 8, 8}, false);
  ASSERT_TRUE(types.ok()) << types.error();
  const auto o = ordered(t);
  EXPECT_EQ(type_of(o, *types, "blk.0.ffn_gate_inp.weight"), GgmlType::kF32);  // the router stays
  EXPECT_EQ(type_of(o, *types, "blk.0.attn_v.weight"), GgmlType::kQ8_0);       // 8 experts: attn_v q8_0
  EXPECT_EQ(type_of(o, *types, "blk.0.ffn_down_exps.weight"), GgmlType::kQ6_K);
  t[0].name = "blk.5.ffn_down_exps.weight";
  auto bad = llama_tensor_types(ordered(t), LlamaFileType::kQ4_K_M, {"llama", 1, 8, 8, 8}, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("bad layer 5"), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace pagoda::format
