// Tests for the public API (include/pagoda/generator.h) on the bundled model: greedy generate is deterministic
// and matches the streamed steps; requests from several threads batch; cancel ends a stream with abort; bad
// options and prompts are errors; quantization at load is reported; tokenize/detokenize round-trip.
#include <pagoda/generator.h>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace pagoda {
namespace {

std::unique_ptr<Generator> bundled(GeneratorOptions o = {}) {
  o.num_threads = 1;
  Result<std::unique_ptr<Generator>> g = Generator::load(o);
  EXPECT_TRUE(g.ok()) << g.error();
  return g.ok() ? std::move(*g) : nullptr;
}

GenerationOptions greedy(int32_t max_tokens) {
  GenerationOptions o;
  o.max_tokens = max_tokens;
  o.temperature = 0.0f;
  o.ignore_eos = true;
  return o;
}

TEST(GeneratorTest, GreedyGenerateMatchesTheStreamedSteps) {
  std::unique_ptr<Generator> g = bundled();
  ASSERT_NE(g, nullptr);
  Result<GenerationResult> whole = g->generate("Once upon a time", greedy(40));
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_EQ(whole->token_ids.size(), 40u);
  EXPECT_EQ(whole->finish_reason, FinishReason::kLength);
  EXPECT_FALSE(whole->text.empty());
  EXPECT_GT(whole->num_prompt_tokens, 1);

  Result<GenerationStream> s = g->submit("Once upon a time", greedy(40));
  ASSERT_TRUE(s.ok()) << s.error();
  std::string text;
  std::vector<int32_t> ids;
  int finished = 0;
  while (std::optional<GenerationStep> step = s->next()) {
    text += step->text;
    ids.insert(ids.end(), step->token_ids.begin(), step->token_ids.end());
    finished += step->finished;
  }
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(text, whole->text);
  EXPECT_EQ(ids, whole->token_ids);
  EXPECT_FALSE(s->next().has_value());
  EXPECT_EQ(g->detokenize(whole->token_ids), whole->text);
}

TEST(GeneratorTest, RequestsFromManyThreadsEachGetTheirOwnDeterministicText) {
  std::unique_ptr<Generator> g = bundled();
  ASSERT_NE(g, nullptr);
  Result<GenerationResult> alone = g->generate("The little dog", greedy(24));
  ASSERT_TRUE(alone.ok());
  std::vector<std::string> texts(8);
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < texts.size(); ++i)
      threads.emplace_back([&, i] {
        Result<GenerationResult> r = g->generate("The little dog", greedy(24));
        if (r.ok()) texts[i] = r->text;
      });
  }
  for (const std::string& t : texts) EXPECT_EQ(t, alone->text);
}

TEST(GeneratorTest, CancelEndsTheStreamWithAbort) {
  std::unique_ptr<Generator> g = bundled();
  ASSERT_NE(g, nullptr);
  Result<GenerationStream> s = g->submit("Once upon a time", greedy(400));
  ASSERT_TRUE(s.ok());
  std::optional<GenerationStep> first = s->next();
  ASSERT_TRUE(first.has_value());
  ASSERT_FALSE(first->finished);
  s->cancel();
  const GenerationResult rest = s->wait();
  // Cancelled at the next step boundary: aborted, unless all 400 tokens were made before the cancel arrived.
  if (rest.finish_reason == FinishReason::kAbort) {
    EXPECT_LT(first->token_ids.size() + rest.token_ids.size(), 400u);
  } else {
    EXPECT_EQ(first->token_ids.size() + rest.token_ids.size(), 400u);
  }
}

TEST(GeneratorTest, BadOptionsAndPromptsAreErrors) {
  GeneratorOptions bad;
  bad.num_threads = -1;
  EXPECT_FALSE(Generator::load(bad).ok());
  GeneratorOptions missing;
  missing.model = "/nonexistent/model.gguf";
  Result<std::unique_ptr<Generator>> m = Generator::load(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("/nonexistent/model.gguf"), std::string::npos);
  GeneratorOptions q;
  q.quantization = "q5_k";
  EXPECT_FALSE(Generator::load(q).ok());

  std::unique_ptr<Generator> g = bundled();
  ASSERT_NE(g, nullptr);
  GenerationOptions o = greedy(4);
  o.top_p = 1.5f;
  Result<GenerationResult> r = g->generate("Once", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("top_p"), std::string::npos);
  EXPECT_FALSE(g->generate(std::string(5000, 'a'), greedy(4)).ok());  // past the 512-token context
}

TEST(GeneratorTest, QuantizationAtLoadIsReported) {
  GeneratorOptions o;
  o.quantization = "q8_0";
  std::unique_ptr<Generator> g = bundled(o);
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->description().find("quantized at load to q8_0"), std::string::npos) << g->description();
  Result<GenerationResult> r = g->generate("Once upon a time", greedy(8));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->token_ids.size(), 8u);
}

TEST(GeneratorTest, TokenizeRoundTrips) {
  std::unique_ptr<Generator> g = bundled();
  ASSERT_NE(g, nullptr);
  const std::vector<int32_t> with_bos = g->tokenize("Once upon a time", true);
  const std::vector<int32_t> without = g->tokenize("Once upon a time", false);
  ASSERT_EQ(with_bos.size(), without.size() + 1);
  EXPECT_EQ(g->detokenize(with_bos), "Once upon a time");
  EXPECT_EQ(std::vector<int32_t>(with_bos.begin() + 1, with_bos.end()), without);
}

}  // namespace
}  // namespace pagoda
