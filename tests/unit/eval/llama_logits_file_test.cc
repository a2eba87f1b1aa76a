// Tests for LlamaLogitsFile (src/eval/llama_logits_file.h) and perplexity's KL mode against it: files written here
// in llama-perplexity's --kl-divergence-base layout (its 16-bit encoding of each row) decode to the rows written,
// the bundled model against a file of its own distributions gives its perplexity and a KL of (nearly) zero, a
// uniform base gives exactly ln(vocab) and a chunk error from the chunks' own perplexities, and malformed files,
// other tokens or another ctx are errors.
#include "eval/llama_logits_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "eval/perplexity.h"
#include "story_tokens_fixture.h"

namespace pagoda::eval {
namespace {

// One row as llama-perplexity encodes it: scale, min log-prob, then q = round((logit - min) / scale).
std::vector<uint16_t> encode_row(std::span<const float> logits) {
  const int32_t vocab = int32_t(logits.size());
  float max_logit = logits[0], min_logit = logits[0];
  for (float v : logits) max_logit = std::max(max_logit, v), min_logit = std::min(min_logit, v);
  min_logit = std::max(min_logit, max_logit - 16);
  double sum_exp = 0.0;
  for (float v : logits) sum_exp += std::exp(double(v) - max_logit);
  const float min_log_prob = min_logit - max_logit - float(std::log(sum_exp));
  const float scale = (max_logit - min_logit) / 65535.f;
  std::vector<uint16_t> row(size_t(2 * ((vocab + 1) / 2) + 4), 0);
  std::memcpy(row.data(), &scale, 4);
  std::memcpy(row.data() + 2, &min_log_prob, 4);
  for (int32_t i = 0; i < vocab; ++i)
    if (scale > 0 && logits[size_t(i)] > min_logit)
      row[size_t(4 + i)] = uint16_t(std::lround((logits[size_t(i)] - min_logit) / scale));
  return row;
}

void write_file(const std::string& path, int32_t ctx, int32_t vocab, std::span<const TokenId> tokens,
                const std::vector<std::vector<float>>& chunk_logits) {
  std::ofstream out(path, std::ios::binary);
  const int32_t num_chunks = int32_t(chunk_logits.size());
  out.write("_logits_", 8);
  out.write(reinterpret_cast<const char*>(&ctx), 4);
  out.write(reinterpret_cast<const char*>(&vocab), 4);
  out.write(reinterpret_cast<const char*>(&num_chunks), 4);
  out.write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(size_t(num_chunks) * size_t(ctx) * 4));
  for (const std::vector<float>& logits : chunk_logits)
    for (size_t r = 0; r < logits.size(); r += size_t(vocab)) {
      const std::vector<uint16_t> row = encode_row(std::span<const float>(logits).subspan(r, size_t(vocab)));
      out.write(reinterpret_cast<const char*>(row.data()), std::streamsize(row.size() * 2));
    }
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("pagoda_llama_logits_" + name)).string();
}

TEST(LlamaLogitsFile, DecodesWhatWasEncoded) {
  const int32_t ctx = 6, vocab = 5;  // 6 - 1 - 3 = 2 scored rows per chunk; an odd vocabulary pads each row
  const std::vector<TokenId> tokens = {1, 2, 3, 4, 0, 1, 1, 4, 3, 2, 1, 0};
  std::vector<std::vector<float>> logits = {{0.f, 1.f, 2.f, 3.f, 4.f, 4.f, 0.f, -1.f, 0.5f, 2.f},
                                            {-30.f, 1.f, 1.f, 1.f, 1.f, 2.f, 2.f, 2.f, 2.f, 2.f}};
  const std::string path = temp_path("decode");
  write_file(path, ctx, vocab, tokens, logits);
  Result<LlamaLogitsFile> f = LlamaLogitsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->ctx(), ctx);
  EXPECT_EQ(f->vocab(), vocab);
  EXPECT_EQ(f->num_chunks(), 2);
  EXPECT_EQ(f->rows_per_chunk(), 2);
  EXPECT_EQ(std::vector<TokenId>(f->tokens().begin(), f->tokens().end()), tokens);
  std::vector<double> log_probs;
  for (int32_t c = 0; c < 2; ++c) {
    ASSERT_TRUE(f->read_chunk(c, log_probs).ok());
    ASSERT_EQ(log_probs.size(), size_t(2 * vocab));
    for (int32_t r = 0; r < 2; ++r) {
      const float* row = logits[size_t(c)].data() + r * vocab;
      double max = row[0], sum = 0.0;
      for (int32_t i = 0; i < vocab; ++i) max = std::max(max, double(row[i]));
      for (int32_t i = 0; i < vocab; ++i) sum += std::exp(row[i] - max);
      for (int32_t i = 0; i < vocab; ++i) {
        // A logit more than 16 below the row's largest is clipped to the row's floor, as llama.cpp writes it.
        const double expected = std::max(double(row[i]), max - 16.0) - max - std::log(sum);
        EXPECT_NEAR(log_probs[size_t(r * vocab + i)], expected, 2e-4) << "chunk " << c << " row " << r << " " << i;
      }
    }
  }
  EXPECT_FALSE(f->read_chunk(2, log_probs).ok());
  std::filesystem::remove(path);
}

TEST(LlamaLogitsFile, MalformedFilesAreErrors) {
  const std::string path = temp_path("bad");
  EXPECT_FALSE(LlamaLogitsFile::open(path + ".missing").ok());
  { std::ofstream(path, std::ios::binary) << "_logitz_0123456789ab"; }
  Result<LlamaLogitsFile> magic = LlamaLogitsFile::open(path);
  ASSERT_FALSE(magic.ok());
  EXPECT_NE(magic.error().find("not a logits file"), std::string::npos) << magic.error();

  const std::vector<TokenId> tokens = {1, 2, 3, 4, 0, 1};
  write_file(path, 6, 5, tokens, {std::vector<float>(10, 0.5f)});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 2);
  Result<LlamaLogitsFile> truncated = LlamaLogitsFile::open(path);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().find("truncated"), std::string::npos) << truncated.error();

  const std::vector<TokenId> negative = {1, 2, -3, 4, 0, 1};
  write_file(path, 6, 5, negative, {std::vector<float>(10, 0.5f)});
  Result<LlamaLogitsFile> bad_id = LlamaLogitsFile::open(path);
  ASSERT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.error().find("negative token id"), std::string::npos) << bad_id.error();
  std::filesystem::remove(path);
}

class LlamaLogitsKlTest : public StoryTokensTest {
 protected:
  // The bundled model's logits of each chunk's scored rows, as perplexity computes them.
  static std::vector<std::vector<float>> own_logits(int32_t ctx, int32_t num_chunks) {
    EngineConfig c = config((ctx + 16) / 16 + 1);
    c.max_seq_len = ctx + 1;
    c.kv.enable_prefix_cache = false;
    c.scheduler.max_num_seqs = 1;
    c.scheduler.max_batched_tokens = ctx;
    c.prompt_logits = true;
    c.rope_context = ctx;
    c.kv_types = KvDType::kF32;
    std::unique_ptr<Engine> engine = make(c);
    std::vector<std::vector<float>> out;
    for (int32_t k = 0; k < num_chunks; ++k) {
      GenerateRequest r;
      r.prompt.assign(tokens_->begin() + int64_t(k) * ctx, tokens_->begin() + int64_t(k + 1) * ctx);
      r.prompt[0] = loaded_->tokenizer->bos_id();
      r.prefill_only = true;
      r.prompt_logits_start = ctx / 2;
      auto h = engine->submit(std::move(r));
      EXPECT_TRUE(h.ok());
      std::vector<float> logits = h->stream->wait_all().prompt_logits;
      logits.resize(size_t(ctx - 1 - ctx / 2) * size_t(loaded_->model->config().vocab_size));  // the scored rows
      out.push_back(std::move(logits));
    }
    return out;
  }
};

TEST_F(LlamaLogitsKlTest, OwnDistributionsGiveZeroKlAndUniformGivesLnVocab) {
  const int32_t ctx = 64, num_chunks = 4, num_threads = 2;
  const int32_t vocab = loaded_->model->config().vocab_size;
  const std::string path = temp_path("own");
  write_file(path, ctx, vocab, *tokens_, own_logits(ctx, num_chunks));
  Result<LlamaLogitsFile> f = LlamaLogitsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.error();
  PerplexityOptions options;
  options.ctx = ctx;
  options.kv_types = KvDType::kF32;  // as the engine above
  auto r = evaluate_perplexity(*loaded_->model, *tokens_, loaded_->tokenizer->bos_id(), num_threads, options, *f);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_TRUE(r->kl.has_value());
  EXPECT_EQ(r->num_chunks, num_chunks);
  EXPECT_EQ(r->num_scored, int64_t(num_chunks) * (ctx / 2 - 1));
  // What is left is the file's 16-bit rounding: each decoded row sums to 1 only within about 1e-4, which a peaked
  // distribution's KL shows (llama-perplexity's KL of a file against its own run does the same).
  EXPECT_LT(r->kl->mean_kl, 2e-5);
  EXPECT_NEAR(r->kl->base_ppl, r->ppl, r->ppl * 1e-4);
  EXPECT_NEAR(r->kl->ln_ppl_ratio, 0.0, 1e-4);
  EXPECT_EQ(r->kl->top1_agreement, 1.0);

  // A uniform base (every row scale 0, log p = -ln vocab): base perplexity = vocab, ln ratio = mean nll - ln vocab.
  std::vector<std::vector<float>> flat(size_t(num_chunks), std::vector<float>(size_t(ctx / 2 - 1) * size_t(vocab), 1.f));
  write_file(path, ctx, vocab, *tokens_, flat);
  Result<LlamaLogitsFile> uniform = LlamaLogitsFile::open(path);
  ASSERT_TRUE(uniform.ok());
  auto u = evaluate_perplexity(*loaded_->model, *tokens_, loaded_->tokenizer->bos_id(), num_threads, options, *uniform);
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_NEAR(u->kl->base_ppl, double(vocab), vocab * 1e-6);
  EXPECT_NEAR(u->kl->ln_ppl_ratio, u->mean_nll - std::log(double(vocab)), 1e-5);
  EXPECT_GT(u->kl->mean_kl, 0.0);
  // Against that base each chunk's mean difference is its own mean nll - ln vocab, which the running perplexity
  // gives (equal chunks: chunk c's mean nll = (c + 1) ln running[c] - c ln running[c - 1]); the chunk error is the
  // standard error of those num_chunks means.
  ASSERT_EQ(u->running_ppl.size(), size_t(num_chunks));
  std::vector<double> chunk_means;
  for (int32_t c = 0; c < num_chunks; ++c)
    chunk_means.push_back((c + 1) * std::log(u->running_ppl[size_t(c)]) -
                          (c > 0 ? c * std::log(u->running_ppl[size_t(c - 1)]) : 0.0) - std::log(double(vocab)));
  double mean = 0.0, sum_sq = 0.0;
  for (double m : chunk_means) mean += m / num_chunks;
  for (double m : chunk_means) sum_sq += (m - mean) * (m - mean);
  const double chunk_error = std::sqrt(sum_sq / (num_chunks - 1) / num_chunks);
  EXPECT_GT(chunk_error, 0.0);
  EXPECT_NEAR(u->kl->ln_ppl_ratio_chunk_error, chunk_error, chunk_error * 1e-6);
  EXPECT_NE(u->kl->ln_ppl_ratio_chunk_error, u->kl->ln_ppl_ratio_error);

  // Another ctx, or a text whose tokens are not the file's, is refused before anything runs.
  options.ctx = 32;
  auto other_ctx = evaluate_perplexity(*loaded_->model, *tokens_, 1, num_threads, options, *uniform);
  ASSERT_FALSE(other_ctx.ok());
  EXPECT_NE(other_ctx.error().find("n_ctx of 64"), std::string::npos) << other_ctx.error();
  options.ctx = ctx;
  std::vector<TokenId> other = *tokens_;
  other[70] = other[70] == 5 ? 6 : 5;
  auto other_tokens = evaluate_perplexity(*loaded_->model, other, 1, num_threads, options, *uniform);
  ASSERT_FALSE(other_tokens.ok());
  EXPECT_NE(other_tokens.error().find("at token 70"), std::string::npos) << other_tokens.error();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagoda::eval
