// LongRoPE's factor set follows the context an engine is configured for (EngineConfig::rope_context), never how its
// sequences are sized: synth's tiny-phi3 (original context 1024) gives the same logits in an engine sized to the
// request (max_seq_len 32, as `pagoda run` sizes its one sequence) as in one of the whole configured context, with
// the long set at a context of 4096 and the short one at 1024; the two sets give different logits.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "engine/engine.h"
#include "loader/loaded_model.h"
#include "support/temp_dir_test.h"
#include "synth/hf_random_model_writer.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

class LongRopeContextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(testing_support::process_temp_path("longrope_context_test"));
    fs::create_directories(*dir_);
    std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-phi3");
    ASSERT_TRUE(shape);
    synth::RandomHfModelOptions o;
    o.shape = *shape;
    o.seed = 7;
    o.gguf = true;
    o.output_path = (*dir_ / "model.gguf").string();
    const Status st = synth::write_random_hf_model(o);
    ASSERT_TRUE(st.ok()) << st.message();
    auto loaded = load_model(o.output_path, kernels::best_kernels());
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    model_ = new LoadedModel(std::move(loaded).value());
  }
  static void TearDownTestSuite() {
    delete model_;
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
  }

  // The logits rows of 6 greedy tokens after a 10-token prompt: f32 [6, vocab].
  static std::vector<float> greedy_logits(int32_t max_seq_len, int32_t rope_context) {
    EngineConfig c;
    c.max_seq_len = max_seq_len;
    c.rope_context = rope_context;
    c.scheduler.max_num_seqs = 1;
    c.scheduler.max_batched_tokens = 16;
    c.kv.block_size = 16;
    c.kv.num_blocks = (max_seq_len + 15) / 16;
    c.num_threads = 1;
    auto engine = Engine::create(*model_->model, *model_->tokenizer, c);
    EXPECT_TRUE(engine.ok()) << engine.error();
    if (!engine.ok()) return {};
    GenerateRequest r;
    r.prompt = {1, 396, 111, 111, 114, 281, 114, 117, 111, 103};
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = 6;
    r.sampling.ignore_eos = true;
    r.output_logits = true;
    auto h = (*engine)->submit(std::move(r));
    EXPECT_TRUE(h.ok()) << h.error();
    if (!h.ok()) return {};
    return h->stream->wait_all().logits;
  }

  static fs::path* dir_;
  static LoadedModel* model_;
};

fs::path* LongRopeContextTest::dir_ = nullptr;
LoadedModel* LongRopeContextTest::model_ = nullptr;

TEST_F(LongRopeContextTest, TheFactorSetFollowsTheConfiguredContextNotTheSequenceSizing) {
  ASSERT_EQ(model_->model->config().rope_original_context, 1024);
  ASSERT_FALSE(model_->model->config().rope_long_factors.empty());
  const std::vector<float> long_whole = greedy_logits(4096, 0);  // rope_context 0: max_seq_len
  const std::vector<float> long_sized = greedy_logits(32, 4096);
  const std::vector<float> short_whole = greedy_logits(1024, 0);
  const std::vector<float> short_sized = greedy_logits(32, 1024);
  ASSERT_EQ(long_whole.size(), size_t(6 * model_->model->config().vocab_size));
  EXPECT_EQ(long_sized, long_whole);
  EXPECT_EQ(short_sized, short_whole);
  EXPECT_EQ(greedy_logits(32, 0), short_whole) << "a context of 32 takes the short set";
  EXPECT_NE(long_whole, short_whole);
}

}  // namespace
}  // namespace pagoda
