// A decoder embedding model (Qwen3-Embedding's layout: a `qwen3` model, last-token pooling, sentence-transformers'
// pooling files, tensors without the "model." prefix, tied embeddings) with random weights (synth's
// tiny-qwen3-embedding shape), written as an HF folder and as its converted GGUF:
// - the GGUF carries qwen3.pooling_type = 3 (llama.cpp's LAST) and the config's Matryoshka sizes;
// - the reference: Model::forward over the whole prompt in a plain KV cache; its last row's final hidden state is
//   checked to be what the LM head reads (tied: token_embd x hidden = that row's logits, from a forward that asks
//   for logits only), and the engine's last-token pooling request returns that vector (whole or chunked prefill,
//   beside a generation), from the GGUF and from the folder alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "format/gguf_names.h"
#include "kv/kv_storage.h"
#include "loader/loaded_model.h"
#include "support/temp_dir_test.h"
#include "synth/hf_random_model_writer.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

class Qwen3EmbeddingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // This process's own folder: ctest runs each test of the suite in a process of its own, at the same time.
    dir_ = new fs::path(testing_support::process_temp_path("qwen3_embedding_test"));
    fs::create_directories(*dir_);
    std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-qwen3-embedding");
    ASSERT_TRUE(shape);
    for (bool gguf : {false, true}) {
      synth::RandomHfModelOptions o;
      o.shape = *shape;
      o.seed = 5;
      o.gguf = gguf;
      o.output_path = (*dir_ / (gguf ? "model.gguf" : "folder")).string();
      const Status st = synth::write_random_hf_model(o);
      ASSERT_TRUE(st.ok()) << st.message();
    }
    auto gguf = load_model((*dir_ / "model.gguf").string(), kernels::best_kernels());
    ASSERT_TRUE(gguf.ok()) << gguf.error();
    gguf_ = new LoadedModel(std::move(gguf).value());
    auto folder = load_model((*dir_ / "folder").string(), kernels::best_kernels());
    ASSERT_TRUE(folder.ok()) << folder.error();
    folder_ = new LoadedModel(std::move(folder).value());
  }
  static void TearDownTestSuite() {
    delete gguf_;
    delete folder_;
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
  }

  static std::unique_ptr<Engine> make(const LoadedModel& m, int32_t max_batched_tokens) {
    EngineConfig c;
    c.max_seq_len = 128;
    c.scheduler.max_num_seqs = 4;
    c.scheduler.max_batched_tokens = max_batched_tokens;
    c.kv.num_blocks = 64;
    c.kv.block_size = 4;
    c.num_threads = 2;
    c.pooling = true;
    auto engine = Engine::create(*m.model, *m.tokenizer, c);
    EXPECT_TRUE(engine.ok()) << engine.error();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }

  struct Reference {
    std::vector<float> hidden;  // f32 [dim]: the last row's final hidden state
    std::vector<float> logits;  // f32 [vocab]: the last row's logits, from a forward that asked for no hidden rows
  };
  // One forward call over the whole prompt in its own KV cache, as the model tests drive it.
  static Reference direct_forward(const Model& model, const std::vector<TokenId>& prompt, bool want_hidden) {
    const int32_t n = int32_t(prompt.size());
    const int32_t num_blocks = (n + 15) / 16;
    ThreadPool pool(1);
    KvStorage kv(model.config().kv_shape(), num_blocks, 16, EngineConfig().kv_types);  // the engine's default types
    Workspace ws(model.config(), n, n, 1, 1, want_hidden ? 1 : 0);
    std::vector<BlockId> table(static_cast<size_t>(num_blocks));
    std::iota(table.begin(), table.end(), 0);
    std::vector<Pos> positions(static_cast<size_t>(n));
    std::iota(positions.begin(), positions.end(), 0);
    const std::vector<int32_t> slots(positions.begin(), positions.end()), seq_starts = {0, n}, context_lens = {n};
    const std::vector<int32_t> last = {n - 1}, none = {};
    BatchView batch;
    batch.tokens = prompt;
    batch.positions = positions;
    batch.slot_ids = slots;
    batch.seq_starts = seq_starts;
    batch.context_lens = context_lens;
    batch.block_tables = BlockTableView{table.data(), 1, num_blocks};
    batch.logits_rows = want_hidden ? none : last;
    batch.hidden_rows = want_hidden ? last : none;
    const LogitsView out = model.forward(batch, kv.view(), ws, pool);
    Reference r;
    if (want_hidden)
      r.hidden.assign(out.hidden_row(0).begin(), out.hidden_row(0).end());
    else
      r.logits.assign(out.row(0).begin(), out.row(0).end());
    return r;
  }

  static std::vector<float> normalized(std::vector<float> v) {
    double sum = 0.0;
    for (float x : v) sum += double(x) * x;
    for (float& x : v) x = float(x / std::sqrt(sum));
    return v;
  }
  static float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float d = 0.0f;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
  }

  static fs::path* dir_;
  static LoadedModel* gguf_;
  static LoadedModel* folder_;
};

fs::path* Qwen3EmbeddingTest::dir_ = nullptr;
LoadedModel* Qwen3EmbeddingTest::gguf_ = nullptr;
LoadedModel* Qwen3EmbeddingTest::folder_ = nullptr;

const char* const kEmbeddingTexts[] = {
    "Instruct: Given a web search query, retrieve relevant passages\nQuery: what is a pagoda",
    "A pagoda is a tiered tower", "x"};

TEST_F(Qwen3EmbeddingTest, TheGgufDeclaresLastPoolingAndTheMatryoshkaSizes) {
  ASSERT_EQ(gguf_->model->config().architecture, "qwen3");
  auto pooling = gguf_->file->get_u32("qwen3.pooling_type");
  ASSERT_TRUE(pooling.ok() && *pooling) << (pooling.ok() ? "missing" : pooling.error());
  EXPECT_EQ(**pooling, 3u);  // LLAMA_POOLING_TYPE_LAST
  auto sizes = gguf_->file->get_i32_array(format::gguf_key::kMatryoshkaDimensions);
  ASSERT_TRUE(sizes.ok() && *sizes);
  EXPECT_EQ(**sizes, (std::vector<int32_t>{32, 64, 128}));
  // The folder, read directly, carries the same metadata.
  auto folder_pooling = folder_->file->get_u32("qwen3.pooling_type");
  ASSERT_TRUE(folder_pooling.ok() && *folder_pooling);
  EXPECT_EQ(**folder_pooling, 3u);
  EXPECT_EQ(gguf_->file->find_tensor(format::gguf_tensor::kOutput), nullptr) << "tied: no output.weight";
}

TEST_F(Qwen3EmbeddingTest, TheReferenceHiddenStateIsWhatTheTiedHeadReads) {
  const Model& model = *gguf_->model;
  const format::GgufTensorInfo* embd = gguf_->file->find_tensor(format::gguf_tensor::kTokenEmbedding);
  ASSERT_NE(embd, nullptr);
  ASSERT_EQ(embd->type, format::GgmlType::kF32);
  const int64_t dim = model.config().dim, vocab = model.config().vocab_size;
  ASSERT_EQ(embd->num_elements(), dim * vocab);
  const float* e = static_cast<const float*>(embd->data);
  for (const char* text : kEmbeddingTexts) {
    const std::vector<TokenId> prompt = gguf_->tokenizer->encode(text, true);
    const Reference h = direct_forward(model, prompt, true), l = direct_forward(model, prompt, false);
    ASSERT_EQ(h.hidden.size(), size_t(dim));
    ASSERT_EQ(l.logits.size(), size_t(vocab));
    float max_logit = 0.0f, max_diff = 0.0f;
    for (int64_t t = 0; t < vocab; ++t) {
      double dot = 0.0;
      for (int64_t d = 0; d < dim; ++d) dot += double(e[t * dim + d]) * h.hidden[size_t(d)];
      max_diff = std::max(max_diff, std::fabs(float(dot) - l.logits[size_t(t)]));
      max_logit = std::max(max_logit, std::fabs(l.logits[size_t(t)]));
    }
    EXPECT_GT(max_logit, 0.0f);
    // F32 weights: equal up to the kernels' summation order.
    EXPECT_LT(max_diff, 1e-4f * max_logit) << text;
  }
}

TEST_F(Qwen3EmbeddingTest, TheEnginesLastTokenPoolingIsTheForwardPassesLastHiddenState) {
  for (const LoadedModel* m : {gguf_, folder_}) {
    for (int32_t budget : {128, 5}) {  // whole prompts in one step, or chunks of at most 5 tokens
      auto engine = make(*m, budget);
      ASSERT_TRUE(engine);
      GenerateRequest gen;
      gen.prompt = m->tokenizer->encode("hello", true);
      gen.sampling.temperature = 0.0f;
      gen.sampling.max_tokens = 8;
      gen.sampling.ignore_eos = true;
      auto beside = engine->submit(gen);
      ASSERT_TRUE(beside.ok()) << beside.error();
      std::vector<RequestHandle> handles;
      for (const char* text : kEmbeddingTexts) {
        GenerateRequest r;
        r.prompt = m->tokenizer->encode(text, true);
        r.prefill_only = true;
        r.pooling = Pooling::kLast;
        auto h = engine->submit(std::move(r));
        ASSERT_TRUE(h.ok()) << h.error();
        handles.push_back(*h);
      }
      for (size_t i = 0; i < handles.size(); ++i) {
        const std::string what = std::string(m == gguf_ ? "gguf" : "folder") + ", budget " + std::to_string(budget) +
                                 ", '" + kEmbeddingTexts[i] + "'";
        RequestOutput out = handles[i].stream->wait_all();
        ASSERT_TRUE(out.finished && out.finish_reason == FinishReason::kStop) << what;
        const std::vector<float> want =
            direct_forward(*gguf_->model, gguf_->tokenizer->encode(kEmbeddingTexts[i], true), true).hidden;
        ASSERT_EQ(out.embedding.size(), want.size()) << what;
        EXPECT_LT(max_abs_diff(out.embedding, want), 1e-4f) << what;
        EXPECT_LT(max_abs_diff(normalized(out.embedding), normalized(want)), 1e-5f) << what;
      }
      EXPECT_EQ(beside->stream->wait_all().num_output_tokens, 8);
    }
  }
}

}  // namespace
}  // namespace pagoda
