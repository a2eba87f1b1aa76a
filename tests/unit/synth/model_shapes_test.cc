// The named shapes: each is found by its name, its heads divide its width and its KV heads its heads, and its
// parameter counts add up; an unknown name is none.
#include "synth/model_shapes.h"

#include <gtest/gtest.h>

#include <set>

namespace pagoda::synth {
namespace {

TEST(ModelShapes, EveryNameFindsAShapeWhoseHeadsAndParametersAreConsistent) {
  const std::vector<std::string> names = model_shape_names();
  ASSERT_GE(names.size(), 10u);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << "a name twice";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::optional<ModelShape> s = find_model_shape(name);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->name, name);
    EXPECT_GT(s->num_layers, 0);
    EXPECT_GT(s->vocab_size, 0);
    ASSERT_GT(s->num_kv_heads, 0);
    EXPECT_EQ(s->num_heads % s->num_kv_heads, 0);
    if (s->head_dim == 0) {
      EXPECT_EQ(s->dim % s->num_heads, 0);
    }
    EXPECT_GT(s->num_active_params(), 0);
    if (s->num_experts > 0) {
      EXPECT_GT(s->num_experts_used, 0);
      EXPECT_LE(s->num_experts_used, s->num_experts);
      EXPECT_LT(s->num_active_params(), s->num_params());  // a token reads only its experts
    } else {
      EXPECT_EQ(s->num_active_params(), s->num_params());
    }
  }
  EXPECT_FALSE(find_model_shape("no-such-model"));
  EXPECT_FALSE(find_model_shape(""));
}

TEST(ModelShapes, PublishedSizesOfWellKnownModels) {
  // TinyLlama-1.1B: 22 layers of 2048, 32 heads over 4 KV heads, 5632 FFN, 32000 tokens: 1.10 B weights.
  const std::optional<ModelShape> tiny = find_model_shape("tinyllama-1.1b");
  ASSERT_TRUE(tiny);
  EXPECT_EQ(tiny->num_layers, 22);
  EXPECT_EQ(tiny->dim, 2048);
  EXPECT_EQ(tiny->num_kv_heads, 4);
  EXPECT_NEAR(double(tiny->num_params()) / 1e9, 1.10, 0.01);
  const std::optional<ModelShape> llama = find_model_shape("llama2-7b");
  ASSERT_TRUE(llama);
  EXPECT_NEAR(double(llama->num_params()) / 1e9, 6.74, 0.01);
  // bge-small-en-v1.5, a BERT encoder: 33.2 M weights (33.4 M with the pooler layer llama.cpp does not load).
  const std::optional<ModelShape> bge = find_model_shape("bge-small-en-v1.5");
  ASSERT_TRUE(bge);
  EXPECT_NEAR(double(bge->num_params()) / 1e6, 33.2, 0.05);
  // jina-reranker-v1-tiny-en (jina-bert-v2): its card's 33.0 M; nomic-embed-text-v1.5 (nomic-bert): its card's 137 M.
  const std::optional<ModelShape> jina = find_model_shape("jina-reranker-v1-tiny-en");
  ASSERT_TRUE(jina);
  EXPECT_NEAR(double(jina->num_params()) / 1e6, 33.0, 0.15);
  const std::optional<ModelShape> nomic = find_model_shape("nomic-embed-text-v1.5");
  ASSERT_TRUE(nomic);
  EXPECT_NEAR(double(nomic->num_params()) / 1e6, 137.0, 0.5);
  // Qwen3-Reranker-0.6B (a qwen3 decoder reranker): Qwen3-0.6B's layers over its 151669 tokens, 0.596 B weights.
  const std::optional<ModelShape> reranker = find_model_shape("qwen3-reranker-0.6b");
  ASSERT_TRUE(reranker);
  EXPECT_TRUE(reranker->decoder_reranker);
  EXPECT_NEAR(double(reranker->num_params()) / 1e9, 0.596, 0.002);
}

}  // namespace
}  // namespace pagoda::synth
