// The KV block types (q8_0 and q4_0: heads of a multiple of 32 values, which the bundled model's heads of 8 are not) on
// a random-weight llama of heads of 32 (synth), with K and V of the same and of different types: a batch gives each
// request the reference loop's tokens of that type; prefix-cache hits, preemption in a tiny pool and speculative
// verification with its rollback change no token.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "engine/engine.h"
#include "loader/loaded_model.h"
#include "support/reference_greedy.h"
#include "support/temp_dir_test.h"
#include "synth/random_model_writer.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

class EngineKvBlockTypesTest : public ::testing::TestWithParam<KvCacheTypes> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(testing_support::process_temp_path("engine_kv_block_types_test"));
    fs::create_directories(*dir_);
    synth::RandomModelOptions o;
    o.shape = synth::ModelShape{.name = "heads-of-32",
                                .dim = 128,
                                .hidden_dim = 256,
                                .num_layers = 2,
                                .num_heads = 4,
                                .num_kv_heads = 2,
                                .vocab_size = 256,
                                .context_length = 512};
    o.seed = 11;
    o.output_path = (*dir_ / "model.gguf").string();
    const Status st = synth::write_random_model(o);
    ASSERT_TRUE(st.ok()) << st.message();
    auto loaded = load_model(o.output_path, kernels::best_kernels());
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    model_ = new LoadedModel(std::move(loaded).value());
    ASSERT_EQ(model_->model->config().head_dim, 32);
  }
  static void TearDownTestSuite() {
    delete model_;
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
  }

  static EngineConfig config(int32_t num_blocks, int32_t num_spec_tokens = 0) {
    EngineConfig c;
    c.max_seq_len = 256;
    c.scheduler.max_num_seqs = 16;
    c.scheduler.max_batched_tokens = 64;
    c.kv.num_blocks = num_blocks;
    c.kv.block_size = 4;
    c.num_threads = 2;
    c.kv_types = GetParam();
    if (num_spec_tokens > 0) {
      c.spec.method = SpecMethod::kNgram;
      c.scheduler.num_speculative_tokens = num_spec_tokens;
    }
    return c;
  }
  static std::unique_ptr<Engine> make(const EngineConfig& c) {
    auto engine = Engine::create(*model_->model, *model_->tokenizer, c);
    EXPECT_TRUE(engine.ok()) << engine.error();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }
  // Eight prompts sharing a 20-token prefix (prefix-cache hits), their tails repeating (prompt-lookup drafts).
  static std::vector<GenerateRequest> requests() {
    std::vector<GenerateRequest> out;
    for (int32_t i = 0; i < 8; ++i) {
      GenerateRequest r;
      for (int32_t t = 0; t < 20; ++t) r.prompt.push_back(3 + (t * 7) % 50);
      for (int32_t t = 0; t < 12 + 3 * i; ++t) r.prompt.push_back(60 + (t + i) % (4 + i % 3));
      r.sampling.temperature = 0.0f;
      r.sampling.max_tokens = 24 + 5 * i;
      out.push_back(std::move(r));
    }
    return out;
  }
  static std::vector<std::vector<TokenId>> run_batch(Engine& engine) {
    std::vector<RequestHandle> handles = *engine.submit_batch(requests());
    std::vector<std::vector<TokenId>> out;
    for (RequestHandle& h : handles) out.push_back(h.stream->wait_all().new_tokens);
    EXPECT_EQ(engine.stats().kv.num_used_blocks, 0);
    return out;
  }

  static fs::path* dir_;
  static LoadedModel* model_;
};

fs::path* EngineKvBlockTypesTest::dir_ = nullptr;
LoadedModel* EngineKvBlockTypesTest::model_ = nullptr;

TEST_P(EngineKvBlockTypesTest, BatchPrefixHitsPreemptionAndSpeculationKeepTheReferenceLoopsTokens) {
  auto roomy = make(config(256));
  auto tiny = make(config(40));  // 160 slots for 8 requests of up to ~100 tokens: preemption
  auto spec = make(config(256, 4));
  ASSERT_TRUE(roomy && tiny && spec);
  const std::vector<GenerateRequest> rs = requests();
  const std::vector<std::vector<TokenId>> batch = run_batch(*roomy);
  for (size_t i = 0; i < rs.size(); ++i) {
    const std::vector<TokenId> reference = testing::reference_greedy(*model_->model, *model_->tokenizer, rs[i].prompt,
                                                                     rs[i].sampling.max_tokens, GetParam());
    EXPECT_EQ(batch[i], reference) << "request " << i;
  }
  EXPECT_GT(roomy->stats().kv.num_prefix_hit_tokens, 0);
  EXPECT_EQ(run_batch(*tiny), batch);
  EXPECT_GT(tiny->stats().num_preemptions, 0);
  EXPECT_EQ(run_batch(*spec), batch);
  EXPECT_GT(spec->stats().spec_num_draft_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(KvTypes, EngineKvBlockTypesTest,
                         ::testing::Values(KvCacheTypes(KvDType::kQ8_0), KvCacheTypes(KvDType::kQ4_0),
                                           KvCacheTypes(KvDType::kQ8_0, KvDType::kF16),
                                           KvCacheTypes(KvDType::kF16, KvDType::kQ4_0)),
                         [](const ::testing::TestParamInfo<KvCacheTypes>& info) {
                           return std::string("K_") + kv_dtype_name(info.param.k) + "_V_" + kv_dtype_name(info.param.v);
                         });

}  // namespace
}  // namespace pagoda
