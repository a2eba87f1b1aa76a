// The Llama forward pass on the bundled model: batched, chunked, paged and multi-sequence steps must give the
// logits of the plain one-token-at-a-time pass, with either kernel table, either attention kernel, fusion on
// or off (bit for bit, for f32 and quantized weights); an INT8 KV cache stays close to the f32 one.
#include "model/llama_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "eval/token_stats.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "kv/kv_storage.h"
#include "model/registry.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"

namespace pagoda {
namespace {

class LlamaModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
    ASSERT_TRUE(file.ok()) << file.error();
    file_ = std::make_unique<format::GgufFile>(std::move(file).value());
    auto model = create_model(*file_, kernels::best_kernels());
    ASSERT_TRUE(model.ok()) << model.error();
    model_ = std::move(model).value();
  }

  // One step over several sequences. seqs[s] = the new tokens of sequence s, which already has
  // `cached[s]` tokens in its blocks `tables[s]`. Returns the logits of every new token, row per token.
  std::vector<std::vector<float>> step(const std::vector<std::vector<TokenId>>& seqs,
                                       const std::vector<int32_t>& cached,
                                       const std::vector<std::vector<BlockId>>& tables, KvStorage& kv, Workspace& ws) {
    std::vector<TokenId> tokens;
    std::vector<Pos> positions;
    std::vector<int32_t> slots, seq_starts{0}, context_lens, logits_rows;
    const int32_t bs = kv.block_size();
    int32_t max_blocks = 0;
    for (const auto& t : tables) max_blocks = std::max(max_blocks, int32_t(t.size()));
    std::vector<BlockId> table_data(seqs.size() * size_t(max_blocks), 0);
    for (size_t s = 0; s < seqs.size(); ++s) {
      std::copy(tables[s].begin(), tables[s].end(), table_data.begin() + s * size_t(max_blocks));
      for (size_t i = 0; i < seqs[s].size(); ++i) {
        const Pos p = cached[s] + Pos(i);
        logits_rows.push_back(int32_t(tokens.size()));
        tokens.push_back(seqs[s][i]);
        positions.push_back(p);
        slots.push_back(tables[s][size_t(p / bs)] * bs + p % bs);
      }
      seq_starts.push_back(int32_t(tokens.size()));
      context_lens.push_back(cached[s] + int32_t(seqs[s].size()));
    }
    BatchView batch{tokens,       positions,
                    slots,        seq_starts,
                    context_lens, BlockTableView{table_data.data(), int32_t(seqs.size()), max_blocks},
                    logits_rows,  {}};
    LogitsView logits = model_->forward(batch, kv.view(), ws, *pool_);
    std::vector<std::vector<float>> rows;
    for (int32_t r = 0; r < logits.num_rows; ++r) rows.emplace_back(logits.row(r).begin(), logits.row(r).end());
    return rows;
  }

  // Makes step() run on a model built with `options` instead of the default one.
  void use_model(const ModelOptions& options, const kernels::KernelTable& kernels = kernels::best_kernels()) {
    auto model = create_model(*file_, kernels, options);
    ASSERT_TRUE(model.ok()) << model.error();
    model_ = std::move(model).value();
  }

  // Replaces the model file (for use_model) by the bundled model with its matrices of rows of whole 32-value
  // blocks quantized to `type` (kF32: none). hidden_dim != 172 also swaps the FFN for random matrices of that
  // width, so that w_down's rows are whole blocks too and get quantized.
  void use_rewritten_model(format::GgmlType type, int32_t hidden_dim) {
    auto bundled = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
    ASSERT_TRUE(bundled.ok()) << bundled.error();
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-0.2f, 0.2f);
    format::GgufWriter w;
    for (const auto& [key, value] : bundled->metadata()) w.set(key, value);
    w.set("llama.feed_forward_length", format::GgufValue::u32(uint32_t(hidden_dim)));
    for (const format::GgufTensorInfo& t : bundled->tensors()) {
      ASSERT_EQ(t.type, format::GgmlType::kF32) << t.name;
      std::vector<int64_t> dims = t.dims;
      const float* data = static_cast<const float*>(t.data);
      const bool is_down = t.name.find("ffn_down") != std::string::npos;
      if (hidden_dim != 172 &&
          (is_down || t.name.find("ffn_gate") != std::string::npos || t.name.find("ffn_up") != std::string::npos)) {
        (is_down ? dims[0] : dims[1]) = hidden_dim;
        tensor_data_.emplace_back(size_t(dims[0] * dims[1]));
        for (float& v : tensor_data_.back()) v = dist(rng);
        data = tensor_data_.back().data();
      }
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      if (type == format::GgmlType::kF32 || dims.size() != 2 || dims[0] % 32 != 0) {
        w.add_tensor(t.name, t.type, dims, data, uint64_t(n) * sizeof(float));
        continue;
      }
      tensor_bytes_.emplace_back(size_t(format::ggml_row_bytes(type, uint64_t(n))));
      if (type == format::GgmlType::kQ8_0)
        quant::quantize_row_q8_0(data, reinterpret_cast<quant::BlockQ8_0*>(tensor_bytes_.back().data()), n);
      else
        quant::quantize_row_q4_0(data, reinterpret_cast<quant::BlockQ4_0*>(tensor_bytes_.back().data()), n);
      w.add_tensor(t.name, type, dims, tensor_bytes_.back().data(), tensor_bytes_.back().size());
    }
    rewritten_bytes_.push_back(w.to_bytes());
    auto file = format::GgufFile::from_memory(rewritten_bytes_.back(), "rewritten.gguf");
    ASSERT_TRUE(file.ok()) << file.error();
    model_.reset();
    file_ = std::make_unique<format::GgufFile>(std::move(file).value());
  }

  // The prompt as one prefill into scattered blocks of 4, then three decode steps: every row of logits.
  std::vector<std::vector<float>> prefill_and_decode(KvStorage& kv, Workspace& ws) {
    const std::vector<BlockId> table = {7, 2, 5, 0};
    auto rows = step({prompt_}, {0}, {table}, kv, ws);
    int32_t len = int32_t(prompt_.size());
    for (TokenId next : {432, 267, 383}) {
      auto decode = step({{next}}, {len++}, {table}, kv, ws);
      rows.push_back(decode[0]);
    }
    return rows;
  }

  // Steps that take every path of the forward pass: a prefill small enough to split the weight rows (11
  // tokens), one that splits the tokens (70, past Workspace::kMaxRowSplitTokens), a decode of two sequences and
  // one of a single sequence. Every row of logits, in that order. kv needs 22 blocks of 4.
  std::vector<std::vector<float>> row_and_token_split_steps(KvStorage& kv, Workspace& ws) {
    std::vector<TokenId> long_prompt;
    for (size_t i = 0; i < 70; ++i) long_prompt.push_back(prompt_[i % prompt_.size()]);
    std::vector<BlockId> table_a = {0, 1, 2, 3}, table_b;
    for (BlockId b = 4; b < 22; ++b) table_b.push_back(b);
    std::vector<std::vector<float>> rows = step({prompt_}, {0}, {table_a}, kv, ws);
    auto append = [&rows](const std::vector<std::vector<float>>& more) {
      rows.insert(rows.end(), more.begin(), more.end());
    };
    append(step({long_prompt}, {0}, {table_b}, kv, ws));
    append(step({{432}, {267}}, {11, 70}, {table_a, table_b}, kv, ws));
    append(step({{383}}, {12}, {table_a}, kv, ws));
    return rows;
  }

  // KL(softmax(p) || softmax(q)) in nats, with the perplexity tool's arithmetic.
  static double kl_divergence(const std::vector<float>& p_logits, const std::vector<float>& q_logits) {
    std::vector<double> lp(p_logits.size()), lq(q_logits.size());
    eval::log_softmax(p_logits, lp);
    eval::log_softmax(q_logits, lq);
    return eval::kl_divergence(lp, lq);
  }

  static TokenId argmax(const std::vector<float>& row) {
    return TokenId(std::max_element(row.begin(), row.end()) - row.begin());
  }

  std::vector<BlockId> identity_table(int32_t n) {
    std::vector<BlockId> t(static_cast<size_t>(n));
    std::iota(t.begin(), t.end(), 0);
    return t;
  }

  static void expect_rows_close(const std::vector<float>& a, const std::vector<float>& b) {
    ASSERT_EQ(a.size(), b.size());
    float max_diff = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
    EXPECT_LT(max_diff, 1e-4f);
  }

  // "Once upon a time, there was a little girl" with BOS, as the tokenizer encodes it.
  const std::vector<TokenId> prompt_ = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298};
  std::unique_ptr<format::GgufFile> file_;
  std::unique_ptr<Model> model_;
  // What use_rewritten_model's files point into, for the fixture's life (an inner buffer never moves).
  std::vector<std::vector<float>> tensor_data_;
  std::vector<std::vector<uint8_t>> tensor_bytes_;
  std::vector<std::vector<uint8_t>> rewritten_bytes_;
  ThreadPool single_pool_{1};
  ThreadPool* pool_ = &single_pool_;  // the pool step() runs on
};

TEST_F(LlamaModelTest, ConfigOfTheBundledModel) {
  const ModelConfig& c = model_->config();
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.context_length, 512);
}

TEST_F(LlamaModelTest, GreedyContinuationOfThePromptIsTheKnownOne) {
  // Feeding the prompt one token at a time, the argmax after each prefix must be the next prompt token
  // wherever the golden text continues that way (this prompt is the model's own greedy output).
  KvStorage kv(model_->config().kv_shape(), 4, 16);
  Workspace ws(model_->config(), 16, 64, 16);
  for (size_t i = 4; i + 1 < prompt_.size(); ++i) {
    if (i == 4) step({std::vector<TokenId>(prompt_.begin(), prompt_.begin() + 4)}, {0}, {identity_table(4)}, kv, ws);
    auto rows = step({{prompt_[i]}}, {int32_t(i)}, {identity_table(4)}, kv, ws);
    const auto& logits = rows[0];
    const TokenId argmax = TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(argmax, prompt_[i + 1]) << "after " << i + 1 << " tokens";
  }
}

TEST_F(LlamaModelTest, BatchedPrefillEqualsOneTokenAtATime) {
  const int32_t n = int32_t(prompt_.size());
  KvStorage kv_a(model_->config().kv_shape(), 4, 16), kv_b(model_->config().kv_shape(), 4, 16);
  Workspace ws(model_->config(), 32, 64, 32);
  auto batched = step({prompt_}, {0}, {identity_table(4)}, kv_a, ws);
  ASSERT_EQ(int32_t(batched.size()), n);
  for (int32_t i = 0; i < n; ++i) {
    auto single = step({{prompt_[size_t(i)]}}, {i}, {identity_table(4)}, kv_b, ws);
    expect_rows_close(batched[size_t(i)], single[0]);
  }
}

// Pooling's rows (BatchView::hidden_rows) are the final hidden states, after the last norm and before the
// classifier: divided by output_norm's weights each has an RMS of 1, and the classifier's matrix (read from the
// GGUF here) times each gives the logits row of its position.
TEST_F(LlamaModelTest, HiddenRowsAreTheNormedStatesTheClassifierReads) {
  const ModelConfig& c = model_->config();
  KvStorage kv(c.kv_shape(), 4, 16);
  Workspace ws(c, 32, 64, 32, 1, 3);
  std::vector<Pos> positions(prompt_.size());
  std::iota(positions.begin(), positions.end(), 0);
  const std::vector<int32_t> slots(positions.begin(), positions.end()),
      seq_starts = {0, int32_t(prompt_.size())}, context_lens = {int32_t(prompt_.size())}, hidden_rows = {0, 5, 10};
  std::vector<int32_t> logits_rows(prompt_.size());
  std::iota(logits_rows.begin(), logits_rows.end(), 0);
  const std::vector<BlockId> table = identity_table(4);
  BatchView batch;
  batch.tokens = prompt_;
  batch.positions = positions;
  batch.slot_ids = slots;
  batch.seq_starts = seq_starts;
  batch.context_lens = context_lens;
  batch.block_tables = BlockTableView{table.data(), 1, 4};
  batch.logits_rows = logits_rows;
  batch.hidden_rows = hidden_rows;
  const LogitsView out = model_->forward(batch, kv.view(), ws, *pool_);
  ASSERT_EQ(out.num_hidden_rows, 3);
  ASSERT_EQ(out.hidden_dim, c.dim);
  const format::GgufTensorInfo* norm = file_->find_tensor("output_norm.weight");
  const format::GgufTensorInfo* classifier = file_->find_tensor("output.weight");
  if (classifier == nullptr) classifier = file_->find_tensor("token_embd.weight");  // tied
  ASSERT_TRUE(norm != nullptr && classifier != nullptr && classifier->type == format::GgmlType::kF32);
  const float* w_norm = static_cast<const float*>(norm->data);
  const float* w_out = static_cast<const float*>(classifier->data);
  for (int32_t r = 0; r < 3; ++r) {
    const std::span<const float> h = out.hidden_row(r);
    double sum_sq = 0.0;
    for (int32_t d = 0; d < c.dim; ++d) sum_sq += double(h[size_t(d)] / w_norm[d]) * double(h[size_t(d)] / w_norm[d]);
    EXPECT_NEAR(std::sqrt(sum_sq / c.dim), 1.0, 1e-3) << "row " << r;
    const std::span<float> logits = out.row(hidden_rows[size_t(r)]);
    for (int32_t v = 0; v < c.vocab_size; ++v) {
      double dot = 0.0;
      for (int32_t d = 0; d < c.dim; ++d) dot += double(w_out[int64_t(v) * c.dim + d]) * double(h[size_t(d)]);
      ASSERT_NEAR(dot, logits[size_t(v)], 1e-3 * (1.0 + std::fabs(dot))) << "row " << r << ", token " << v;
    }
  }
}

TEST_F(LlamaModelTest, ChunkedPrefillEqualsWholePrefill) {
  KvStorage kv_a(model_->config().kv_shape(), 4, 16), kv_b(model_->config().kv_shape(), 4, 16);
  Workspace ws(model_->config(), 32, 64, 32);
  auto whole = step({prompt_}, {0}, {identity_table(4)}, kv_a, ws);
  const std::vector<TokenId> first(prompt_.begin(), prompt_.begin() + 3);
  const std::vector<TokenId> second(prompt_.begin() + 3, prompt_.begin() + 7);
  const std::vector<TokenId> third(prompt_.begin() + 7, prompt_.end());
  step({first}, {0}, {identity_table(4)}, kv_b, ws);
  step({second}, {3}, {identity_table(4)}, kv_b, ws);
  auto last = step({third}, {7}, {identity_table(4)}, kv_b, ws);
  expect_rows_close(last.back(), whole.back());
}

TEST_F(LlamaModelTest, ScatteredBlocksEqualContiguousBlocks) {
  // Block size 4: the 11 prompt tokens span 3 blocks; put them in blocks 7, 2, 5 of a pool of 8.
  KvStorage kv_a(model_->config().kv_shape(), 8, 4), kv_b(model_->config().kv_shape(), 8, 4);
  Workspace ws(model_->config(), 32, 64, 32);
  auto contiguous = step({prompt_}, {0}, {{0, 1, 2}}, kv_a, ws);
  auto scattered = step({prompt_}, {0}, {{7, 2, 5}}, kv_b, ws);
  for (size_t i = 0; i < prompt_.size(); ++i) expect_rows_close(scattered[i], contiguous[i]);
}

TEST_F(LlamaModelTest, TwoSequencesInOneStepEqualEachAlone) {
  const std::vector<TokenId> other = {1, 346, 306, 414, 432, 263};
  KvStorage kv(model_->config().kv_shape(), 8, 4), kv_alone(model_->config().kv_shape(), 8, 4);
  Workspace ws(model_->config(), 32, 64, 32);
  auto together = step({prompt_, other}, {0, 0}, {{0, 1, 2}, {3, 4}}, kv, ws);
  auto alone_a = step({prompt_}, {0}, {{0, 1, 2}}, kv_alone, ws);
  auto alone_b = step({other}, {0}, {{3, 4}}, kv_alone, ws);
  expect_rows_close(together[prompt_.size() - 1], alone_a.back());
  expect_rows_close(together.back(), alone_b.back());
  // A decode step for both, after the prefill: same again.
  auto decode_together =
      step({{432}, {267}}, {int32_t(prompt_.size()), int32_t(other.size())}, {{0, 1, 2}, {3, 4}}, kv, ws);
  auto decode_a = step({{432}}, {int32_t(prompt_.size())}, {{0, 1, 2}}, kv_alone, ws);
  auto decode_b = step({{267}}, {int32_t(other.size())}, {{3, 4}}, kv_alone, ws);
  expect_rows_close(decode_together[0], decode_a[0]);
  expect_rows_close(decode_together[1], decode_b[0]);
}

TEST_F(LlamaModelTest, ScalarAndSimdKernelsAgree) {
  const kernels::KernelTable* simd = kernels::kernels_for(kernels::Isa::kAvx2);
  if (simd == nullptr) GTEST_SKIP() << "no AVX2";
  auto scalar_model = create_model(*file_, *kernels::kernels_for(kernels::Isa::kScalar));
  ASSERT_TRUE(scalar_model.ok());
  auto simd_model = create_model(*file_, *simd);
  ASSERT_TRUE(simd_model.ok());
  KvStorage kv(model_->config().kv_shape(), 4, 16);
  Workspace ws(model_->config(), 32, 64, 32);
  std::swap(model_, scalar_model.value());
  auto a = step({prompt_}, {0}, {identity_table(4)}, kv, ws);
  std::swap(model_, simd_model.value());
  auto b = step({prompt_}, {0}, {identity_table(4)}, kv, ws);
  for (size_t i = 0; i < prompt_.size(); ++i) expect_rows_close(a[i], b[i]);
}

TEST_F(LlamaModelTest, ThreadedForwardEqualsOneThread) {
  // Prefill splits tokens and decode splits rows across the pool; neither may change the logits.
  const ModelConfig& c = model_->config();
  KvStorage kv_one(c.kv_shape(), 4, 16), kv_three(c.kv_shape(), 4, 16);
  Workspace ws_one(c, 32, 64, 32), ws_three(c, 32, 64, 32, 3);
  auto prefill_one = step({prompt_}, {0}, {identity_table(4)}, kv_one, ws_one);
  auto decode_one = step({{432}}, {int32_t(prompt_.size())}, {identity_table(4)}, kv_one, ws_one);
  ThreadPool three(3);
  pool_ = &three;
  auto prefill_three = step({prompt_}, {0}, {identity_table(4)}, kv_three, ws_three);
  auto decode_three = step({{432}}, {int32_t(prompt_.size())}, {identity_table(4)}, kv_three, ws_three);
  pool_ = &single_pool_;
  for (size_t i = 0; i < prompt_.size(); ++i) EXPECT_EQ(prefill_three[i], prefill_one[i]) << "row " << i;
  EXPECT_EQ(decode_three[0], decode_one[0]);
}

TEST_F(LlamaModelTest, FlashAttentionEqualsNaiveAttention) {
  const ModelConfig c = model_->config();  // a copy: use_model replaces the model
  Workspace ws(c, 32, 64, 32);
  KvStorage kv_flash(c.kv_shape(), 8, 4), kv_naive(c.kv_shape(), 8, 4);
  use_model(ModelOptions{.fusion = true, .attention = AttentionKind::kFlash});
  auto flash = prefill_and_decode(kv_flash, ws);
  use_model(ModelOptions{.fusion = true, .attention = AttentionKind::kNaive});
  auto naive = prefill_and_decode(kv_naive, ws);
  ASSERT_EQ(flash.size(), naive.size());
  for (size_t i = 0; i < flash.size(); ++i) {
    expect_rows_close(flash[i], naive[i]);
    EXPECT_EQ(argmax(flash[i]), argmax(naive[i])) << "row " << i;
  }
}

TEST_F(LlamaModelTest, FusionOffEqualsFusionOn) {
  const ModelConfig c = model_->config();  // a copy: use_model replaces the model
  Workspace ws(c, 32, 64, 32);
  for (KvDType dtype : {KvDType::kF32, KvDType::kInt8, KvDType::kF16, KvDType::kBF16}) {
    KvStorage kv_fused(c.kv_shape(), 8, 4, dtype), kv_plain(c.kv_shape(), 8, 4, dtype);
    use_model(ModelOptions{.fusion = true});
    auto fused = prefill_and_decode(kv_fused, ws);
    use_model(ModelOptions{.fusion = false});
    auto plain = prefill_and_decode(kv_plain, ws);
    for (size_t i = 0; i < fused.size(); ++i) {
      expect_rows_close(fused[i], plain[i]);
      EXPECT_EQ(argmax(fused[i]), argmax(plain[i])) << kv_dtype_name(dtype) << " row " << i;
    }
  }
}

TEST_F(LlamaModelTest, FusionOnAndOffGiveBitIdenticalLogitsForF32AndQuantizedWeights) {
  // Each fused op computes exactly what its unfused sequence computes (fused RMSNorm + Q8_0 writes the bytes of
  // rmsnorm then quantize; the kernels compute each row and each token alone; SiLU and the residual add are
  // elementwise), so fusion may not change a bit, for any weight type, kernel table, thread count or split.
  // hidden 172 keeps w_down in f32 next to quantized weights; hidden 192 quantizes it too.
  struct Weights {
    format::GgmlType type;
    int32_t hidden_dim;
  };
  const Weights all_weights[] = {{format::GgmlType::kF32, 172},  {format::GgmlType::kQ8_0, 172},
                                 {format::GgmlType::kQ4_0, 172}, {format::GgmlType::kF32, 192},
                                 {format::GgmlType::kQ8_0, 192}, {format::GgmlType::kQ4_0, 192}};
  for (const Weights& weights : all_weights) {
    use_rewritten_model(weights.type, weights.hidden_dim);
    for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2}) {
      const kernels::KernelTable* table = kernels::kernels_for(isa);
      if (table == nullptr) continue;
      for (int32_t threads : {1, 3}) {
        const std::string label = std::string(format::ggml_type_name(weights.type)) + " hidden " +
                                  std::to_string(weights.hidden_dim) + ", " + std::string(kernels::isa_name(isa)) +
                                  ", " + std::to_string(threads) + " threads";
        ThreadPool pool(threads);
        pool_ = &pool;
        use_model(ModelOptions{.fusion = true}, *table);
        const ModelConfig c = model_->config();
        Workspace ws(c, 80, 128, 80, threads);
        KvStorage kv_fused(c.kv_shape(), 22, 4), kv_plain(c.kv_shape(), 22, 4);
        const auto fused = row_and_token_split_steps(kv_fused, ws);
        use_model(ModelOptions{.fusion = false}, *table);
        const auto plain = row_and_token_split_steps(kv_plain, ws);
        pool_ = &single_pool_;
        ASSERT_EQ(fused.size(), plain.size());
        for (size_t i = 0; i < fused.size(); ++i) ASSERT_EQ(fused[i], plain[i]) << label << ", row " << i;
      }
    }
  }
}

TEST_F(LlamaModelTest, FusionCutsThePoolJobsOfAStep) {
  // Per layer of a decode step, unfused: Q, K, V, attention, wo, gate, up, down (8 jobs); fused: Q/K/V,
  // attention, wo + residual, gate/up + SiLU (+ w_down's quantization), down + residual (5). An 11-token
  // prefill of quantized weights, unfused, quantizes each matmul's input in a job of its own (15 jobs); fused,
  // the norm writes the Q8_0 input for Q/K/V and for gate/up, and only wo's input is quantized apart (8).
  // The classifier adds 1 job to a decode and 2 to the prefill.
  use_rewritten_model(format::GgmlType::kQ4_0, 192);
  ThreadPool pool(2);
  pool_ = &pool;
  uint64_t prefill_jobs[2] = {}, decode_jobs[2] = {};
  for (bool fusion : {false, true}) {
    use_model(ModelOptions{.fusion = fusion});
    const ModelConfig c = model_->config();
    Workspace ws(c, 16, 64, 16, 2);
    KvStorage kv(c.kv_shape(), 4, 4);
    const uint64_t start = pool.num_jobs_dispatched();
    step({prompt_}, {0}, {identity_table(4)}, kv, ws);
    const uint64_t after_prefill = pool.num_jobs_dispatched();
    step({{432}}, {int32_t(prompt_.size())}, {identity_table(4)}, kv, ws);
    prefill_jobs[fusion] = after_prefill - start;
    decode_jobs[fusion] = pool.num_jobs_dispatched() - after_prefill;
  }
  pool_ = &single_pool_;
  const uint64_t num_layers = uint64_t(model_->config().num_layers);
  EXPECT_EQ(decode_jobs[false], 8 * num_layers + 1);
  EXPECT_EQ(decode_jobs[true], 5 * num_layers + 1);
  EXPECT_EQ(prefill_jobs[false], 15 * num_layers + 2);
  EXPECT_EQ(prefill_jobs[true], 8 * num_layers + 2);
}

TEST_F(LlamaModelTest, RoundedKvCachesStayCloseToF32) {
  // Per token per head int8 with a symmetric scale: each K/V element is off by at most half a step
  // (max|row| / 254). The logits move (by up to ~0.9 of a range of ~20 on this 64-wide model, whose
  // head_dim of 8 leaves few elements per scale), but the next-token distributions barely do: measured mean KL
  // 0.005 nats over the prompt and three decodes, and no greedy choice changes. f16 and bf16 round each value alone
  // (8 and 11 bits of mantissa): within the same bounds. K and V of different types take both paths at once.
  const ModelConfig c = model_->config();  // a copy: use_model replaces the model
  Workspace ws(c, 32, 64, 32);
  for (AttentionKind attention : {AttentionKind::kFlash, AttentionKind::kNaive})
    for (KvCacheTypes types : {KvCacheTypes(KvDType::kInt8), KvCacheTypes(KvDType::kF16), KvCacheTypes(KvDType::kBF16),
                               KvCacheTypes(KvDType::kF16, KvDType::kInt8)}) {
      SCOPED_TRACE(kv_types_name(types));
      use_model(ModelOptions{.fusion = true, .attention = attention});
      KvStorage kv_f32(c.kv_shape(), 8, 4, KvDType::kF32), kv_int8(c.kv_shape(), 8, 4, types);
      auto f32 = prefill_and_decode(kv_f32, ws);
      auto int8 = prefill_and_decode(kv_int8, ws);
      double kl_sum = 0.0, kl_max = 0.0;
      bool any_diff = false;
      for (size_t i = 0; i < f32.size(); ++i) {
        const double kl = kl_divergence(f32[i], int8[i]);
        kl_sum += kl;
        kl_max = std::max(kl_max, kl);
        any_diff |= f32[i] != int8[i];
        EXPECT_EQ(argmax(f32[i]), argmax(int8[i])) << "row " << i;
      }
      EXPECT_TRUE(any_diff) << "the type must actually round something";
      EXPECT_LT(kl_sum / double(f32.size()), 0.01);
      EXPECT_LT(kl_max, 0.15);
    }
}

TEST_F(LlamaModelTest, LogitsAreBitIdenticalWithAndWithoutAPrefixCacheHit) {
  // A prefix-cache hit means a sequence's first blocks hold K/V that another sequence computed, in another
  // step, and only the rest is computed now. With f32 KV that must not change a single bit of the logits.
  const ModelConfig& c = model_->config();
  std::vector<TokenId> prompt;  // 2 full blocks of 8 shared, then a suffix of 5
  for (int i = 0; i < 21; ++i) prompt.push_back(prompt_[size_t(i) % prompt_.size()]);
  const std::vector<TokenId> prefix(prompt.begin(), prompt.begin() + 16), suffix(prompt.begin() + 16, prompt.end());
  for (int32_t threads : {1, 2}) {
    ThreadPool pool(threads);
    pool_ = &pool;
    Workspace ws(c, 32, 64, 32, threads);
    KvStorage kv(c.kv_shape(), 8, 8);
    // The first request: the whole prompt at once, in blocks 0, 1, 2, alongside another sequence.
    auto first = step({prompt, {1, 346, 306}}, {0, 0}, {{0, 1, 2}, {3}}, kv, ws);
    // The second: blocks 0 and 1 are the cached prefix; only the suffix runs, into block 4.
    auto hit = step({suffix}, {16}, {{0, 1, 4}}, kv, ws);
    // Without the cache: a fresh pool and the whole prompt alone.
    KvStorage fresh(c.kv_shape(), 8, 8);
    auto miss = step({prompt}, {0}, {{5, 6, 7}}, fresh, ws);
    pool_ = &single_pool_;
    ASSERT_EQ(hit.size(), suffix.size());
    for (size_t i = 0; i < suffix.size(); ++i) {
      EXPECT_EQ(hit[i], miss[16 + i]) << "suffix row " << i << ", " << threads << " threads";
      EXPECT_EQ(hit[i], first[16 + i]) << "suffix row " << i << ", " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace pagoda
