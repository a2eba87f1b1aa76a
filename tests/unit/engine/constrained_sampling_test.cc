// The Engine's per-request constraints on the bundled model (stories260K, which knows nothing of JSON): a grammar
// masks every draw (greedy and sampled, n > 1, under preemption) so the output is a sentence of it and the
// request ends as soon as it is complete; a grammar that never completes ends by length; logit_bias bans and
// forces tokens; stop_token_ids end a generation without text; min_tokens holds off the end; a reasoning gate
// leaves the output free until its end tokens, then the grammar holds.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocabulary.h"
#include "support/bundled_engine_fixture.h"

namespace pagoda {
namespace {

using grammar::GrammarSpec;

class ConstrainedSamplingTest : public BundledEngineTest {
 protected:
  static void SetUpTestSuite() {
    BundledEngineTest::SetUpTestSuite();
    compiler_ = new grammar::GrammarCompiler(grammar::TokenVocabulary::from_tokenizer(*loaded_->tokenizer), 16);
  }
  static void TearDownTestSuite() {
    delete compiler_;
    BundledEngineTest::TearDownTestSuite();
  }

  static std::unique_ptr<Engine> make(int32_t num_blocks = 256, int32_t num_spec_tokens = 0) {
    EngineConfig c = config(num_blocks, 16, num_spec_tokens);
    c.scheduler.max_num_seqs = 16;
    return BundledEngineTest::make(c);
  }
  static GenerateRequest request(const std::string& text, int32_t max_tokens, float temperature = 0.0f) {
    return BundledEngineTest::request(text, max_tokens, temperature);
  }
  static std::shared_ptr<const grammar::CompiledGrammar> compile(GrammarSpec::Kind kind, std::string text,
                                                                 std::vector<std::string> choices = {}) {
    GrammarSpec spec;
    spec.kind = kind;
    spec.text = std::move(text);
    spec.choices = std::move(choices);
    auto g = compiler_->compile(spec);
    EXPECT_TRUE(g.ok()) << g.error();
    return g.ok() ? *g : nullptr;
  }
  static RequestOutput run(Engine& engine, GenerateRequest r) { return run_alone(engine, std::move(r)); }
  // Whether `text` is a complete sentence of `g`.
  static bool matches(const std::shared_ptr<const grammar::CompiledGrammar>& g, const std::string& text) {
    grammar::GrammarMatcher m(g);
    return m.accept_bytes(text) && m.can_end();
  }

  inline static grammar::GrammarCompiler* compiler_ = nullptr;
};

constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "pets": {"type": "array", "items": {"enum": ["cat", "dog"]}, "maxItems": 3}
  },
  "required": ["name", "age", "pets"],
  "additionalProperties": false
})";

void expect_person(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  ASSERT_TRUE(j.is_object()) << text;
  EXPECT_EQ(j.size(), 3u) << text;
  ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << text;
  EXPECT_LE(j["name"].get<std::string>().size(), 12u * 4) << text;  // code points, at most 4 bytes each
  ASSERT_TRUE(j.contains("age") && j["age"].is_number_integer()) << text;
  EXPECT_GE(j["age"].get<int64_t>(), 0) << text;
  EXPECT_LE(j["age"].get<int64_t>(), 120) << text;
  ASSERT_TRUE(j.contains("pets") && j["pets"].is_array()) << text;
  EXPECT_LE(j["pets"].size(), 3u) << text;
  for (const auto& p : j["pets"]) EXPECT_TRUE(p == "cat" || p == "dog") << text;
}

TEST_F(ConstrainedSamplingTest, GreedyUnderAJsonSchemaIsValidAndEndsWhenComplete) {
  auto engine = make();
  ASSERT_TRUE(engine);
  auto g = compile(GrammarSpec::Kind::kJsonSchema, kPersonSchema);
  ASSERT_TRUE(g);
  GenerateRequest r = request("Once upon a time", 200);
  r.grammar = g;
  const RequestOutput out = run(*engine, r);
  EXPECT_EQ(out.finish_reason, FinishReason::kStop) << out.text;
  EXPECT_LT(out.num_output_tokens, 200);
  expect_person(out.text);
  EXPECT_TRUE(matches(g, out.text)) << out.text;
  // The text is the tokens' text: nothing held back or added.
  EXPECT_EQ(loaded_->tokenizer->decode(out.new_tokens), out.text);
  // Without the grammar the same greedy request writes a story, not JSON.
  r.grammar = nullptr;
  const RequestOutput free = run(*engine, r);
  EXPECT_TRUE(nlohmann::json::parse(free.text, nullptr, false).is_discarded()) << free.text;
}

TEST_F(ConstrainedSamplingTest, WithSpeculativeDecodingConstrainedSequencesDraftAndKeepTheirText) {
  // Each draft's row is masked as a plain draw's: greedy constrained requests give the tokens they give without
  // speculation, drafts the grammar allows are accepted, and ones it forbids are rejected.
  auto spec = make(256, 4);
  auto plain = make();
  ASSERT_TRUE(spec && plain);
  // The output repeats the prompt's words, so prompt lookup proposes drafts the grammar allows...
  auto echo = compile(GrammarSpec::Kind::kRegex, "( ?Once upon a time\\.){4}");
  // ...and here the prompt's continuation (" upon a time") is what lookup proposes, but only " there" may follow.
  auto swerve = compile(GrammarSpec::Kind::kRegex, "( ?Once upon a time there\\.){3}");
  auto person = compile(GrammarSpec::Kind::kJsonSchema, kPersonSchema);
  ASSERT_TRUE(echo && swerve && person);
  int64_t drafts_before = 0;
  for (const auto& g : {echo, swerve, person}) {
    GenerateRequest r = request("Once upon a time. Once upon a time.", 120);
    r.grammar = g;
    const RequestOutput with = run(*spec, r);
    const RequestOutput without = run(*plain, r);
    EXPECT_EQ(with.new_tokens, without.new_tokens) << with.text << " | " << without.text;
    EXPECT_EQ(with.finish_reason, FinishReason::kStop) << with.text;
    EXPECT_TRUE(matches(g, with.text)) << with.text;
    const EngineStats st = spec->stats();
    EXPECT_GT(st.spec_num_drafts, drafts_before) << with.text;  // this constrained request verified drafts
    drafts_before = st.spec_num_drafts;
  }
  const EngineStats st = spec->stats();
  EXPECT_GT(st.spec_num_accepted_tokens, 0);
  EXPECT_LT(st.spec_num_accepted_tokens, st.spec_num_draft_tokens);  // the forbidden ones were rejected
  // min_tokens holds off the end tokens in drafted rows too.
  GenerateRequest held = request("Once upon a time", 40);
  held.sampling.min_tokens = 40;
  EXPECT_EQ(run(*spec, held).new_tokens, run(*plain, held).new_tokens);
  // Sampled constrained requests under speculation stay inside the grammar.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    GenerateRequest r = request("Once upon a time. Once upon a time.", 120, 0.8f);
    r.sampling.seed = seed;
    r.grammar = person;
    const RequestOutput out = run(*spec, r);
    if (out.finish_reason == FinishReason::kStop) expect_person(out.text);
    EXPECT_TRUE(out.finish_reason == FinishReason::kStop || out.finish_reason == FinishReason::kLength) << out.text;
  }
  EXPECT_EQ(spec->stats().kv.num_used_blocks, 0);
}

TEST_F(ConstrainedSamplingTest, SampledChoicesAndRegexWithNSamples) {
  auto engine = make();
  ASSERT_TRUE(engine);
  const std::vector<std::string> choices = {"red", "green", "blue sky"};
  auto choice = compile(GrammarSpec::Kind::kChoice, "", choices);
  auto regex = compile(GrammarSpec::Kind::kRegex, "[a-c]{2,4}-[0-9]+");
  ASSERT_TRUE(choice && regex);
  for (const auto& g : {choice, regex}) {
    GenerateRequest r = request("The cat", 24, 1.5f);
    r.sampling.seed = 7;
    r.grammar = g;
    auto handles = engine->submit_samples(r, 6);
    ASSERT_TRUE(handles.ok()) << handles.error();
    std::set<std::string> texts;
    for (auto& h : *handles) {
      const RequestOutput out = h.stream->wait_all();
      EXPECT_TRUE(matches(g, out.text)) << out.text;
      if (g == choice) {
        EXPECT_EQ(out.finish_reason, FinishReason::kStop);
        EXPECT_NE(std::find(choices.begin(), choices.end(), out.text), choices.end()) << out.text;
      }
      texts.insert(out.text);
    }
    EXPECT_GE(texts.size(), 2u) << "six samples at temperature 1.5 drew one text";
  }
}

TEST_F(ConstrainedSamplingTest, ConstrainedBatchUnderPreemptionStaysValid) {
  // 12 KV blocks of 16 for 8 requests of up to 16 + 60 tokens: they preempt one another, and a preempted
  // request's grammar state must survive its recompute.
  auto engine = make(12);
  ASSERT_TRUE(engine);
  auto g = compile(GrammarSpec::Kind::kJsonSchema, kPersonSchema);
  ASSERT_TRUE(g);
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < 8; ++i) {
    GenerateRequest r = request(i % 2 ? "Lily and Ben went to the park. They" : "The sun", 60, 0.8f);
    r.sampling.seed = uint64_t(i);
    r.grammar = g;
    requests.push_back(std::move(r));
  }
  auto handles = engine->submit_batch(std::move(requests));
  ASSERT_TRUE(handles.ok()) << handles.error();
  for (auto& h : *handles) {
    const RequestOutput out = h.stream->wait_all();
    if (out.finish_reason == FinishReason::kStop) {
      expect_person(out.text);
    } else {
      EXPECT_EQ(out.finish_reason, FinishReason::kLength);
      grammar::GrammarMatcher m(g);
      EXPECT_TRUE(m.accept_bytes(out.text)) << "a prefix of the grammar: " << out.text;
    }
  }
  EXPECT_GT(engine->stats().num_preemptions, 0);
}

TEST_F(ConstrainedSamplingTest, AGrammarThatCannotCompleteInMaxTokensEndsByLength) {
  auto engine = make();
  ASSERT_TRUE(engine);
  // 600 bytes: no 9 tokens of this vocabulary spell them. (A grammar of no finite string, root ::= "ab" root, is
  // refused by the compiler: it matches no string.)
  auto g = compile(GrammarSpec::Kind::kRegex, "(ab){300}");
  ASSERT_TRUE(g);
  GenerateRequest r = request("Once upon a time", 9);
  r.grammar = g;
  const RequestOutput out = run(*engine, r);
  EXPECT_EQ(out.finish_reason, FinishReason::kLength);
  EXPECT_EQ(out.num_output_tokens, 9);
  grammar::GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_bytes(out.text)) << out.text;
  EXPECT_TRUE(out.text.starts_with("abab")) << out.text;
}

TEST_F(ConstrainedSamplingTest, LogitBiasBansAndForcesTokens) {
  auto engine = make();
  ASSERT_TRUE(engine);
  const RequestOutput base = run(*engine, request("Once upon a time", 6));
  ASSERT_EQ(base.new_tokens.size(), 6u);
  // -100 on every token greedy chose: none of them comes back.
  GenerateRequest banned = request("Once upon a time", 6);
  for (TokenId t : base.new_tokens) banned.sampling.logit_bias.push_back({t, -100.0f});
  const RequestOutput b = run(*engine, banned);
  for (TokenId t : b.new_tokens)
    EXPECT_EQ(std::find(base.new_tokens.begin(), base.new_tokens.end(), t), base.new_tokens.end()) << t;
  // +100 on one token: sampled at temperature 1, it is every token.
  const TokenId forced = loaded_->tokenizer->encode(" dog", false).back();
  GenerateRequest f = request("Once upon a time", 5, 1.0f);
  f.sampling.seed = 3;
  f.sampling.logit_bias.push_back({forced, 100.0f});
  const RequestOutput fo = run(*engine, f);
  EXPECT_EQ(fo.new_tokens, std::vector<TokenId>(5, forced));
  // A bias may not lift a token the grammar masked out.
  GenerateRequest fg = f;
  fg.grammar = compile(GrammarSpec::Kind::kChoice, "", {"yes", "no"});
  const RequestOutput fgo = run(*engine, fg);
  EXPECT_TRUE(fgo.text == "yes" || fgo.text == "no") << fgo.text;
  // Out of the vocabulary or out of range: refused at submit.
  GenerateRequest bad = request("Once", 4);
  bad.sampling.logit_bias.push_back({loaded_->tokenizer->vocab_size(), 1.0f});
  EXPECT_FALSE(engine->submit(bad).ok());
  bad.sampling.logit_bias = {{1, 101.0f}};
  EXPECT_FALSE(engine->submit(bad).ok());
}

TEST_F(ConstrainedSamplingTest, StopTokenIdsEndWithoutTextAndMinTokensHoldsTheEndOff) {
  auto engine = make();
  ASSERT_TRUE(engine);
  const RequestOutput base = run(*engine, request("Once upon a time", 12));
  ASSERT_EQ(base.new_tokens.size(), 12u);
  // Stop at the first occurrence of greedy's 4th token (it may occur earlier too).
  const TokenId stop = base.new_tokens[3];
  const size_t first =
      size_t(std::find(base.new_tokens.begin(), base.new_tokens.end(), stop) - base.new_tokens.begin());
  GenerateRequest r = request("Once upon a time", 12);
  r.sampling.stop_token_ids = {stop};
  const RequestOutput out = run(*engine, r);
  EXPECT_EQ(out.finish_reason, FinishReason::kStop);
  ASSERT_EQ(out.new_tokens.size(), first + 1);
  EXPECT_EQ(out.new_tokens.back(), stop);
  const std::vector<TokenId> before(base.new_tokens.begin(), base.new_tokens.begin() + std::ptrdiff_t(first));
  EXPECT_EQ(out.text, loaded_->tokenizer->decode(before)) << "the stop token adds no text";

  // min_tokens past the stop token: it cannot be drawn before then, so the output is at least that long.
  r.sampling.min_tokens = int32_t(first) + 3;
  const RequestOutput held = run(*engine, r);
  EXPECT_GE(held.num_output_tokens, int32_t(first) + 3);
  for (int32_t i = 0; i < int32_t(first) + 3 && i < int32_t(held.new_tokens.size()); ++i)
    EXPECT_NE(held.new_tokens[size_t(i)], stop) << i;
  // The end-of-generation token is held off too: forced by +100, EOS comes first, or right after min_tokens.
  TokenId eos = -1;
  for (TokenId t = 0; t < loaded_->tokenizer->vocab_size() && eos < 0; ++t)
    if (loaded_->tokenizer->ends_generation(t)) eos = t;
  ASSERT_GE(eos, 0);
  GenerateRequest story = request("Once upon a time", 20);
  story.sampling.logit_bias = {{eos, 100.0f}};
  const RequestOutput ended = run(*engine, story);
  EXPECT_EQ(ended.finish_reason, FinishReason::kStop);
  EXPECT_EQ(ended.new_tokens, std::vector<TokenId>{eos});
  EXPECT_EQ(ended.text, "");
  story.sampling.min_tokens = 6;
  const RequestOutput held_eos = run(*engine, story);
  EXPECT_EQ(held_eos.finish_reason, FinishReason::kStop);
  ASSERT_EQ(held_eos.new_tokens.size(), 7u);
  EXPECT_EQ(held_eos.new_tokens.back(), eos);
  for (size_t i = 0; i < 6; ++i) EXPECT_NE(held_eos.new_tokens[i], eos) << i;
  // min_tokens above max_tokens is refused.
  GenerateRequest bad = request("Once", 4);
  bad.sampling.min_tokens = 5;
  EXPECT_FALSE(engine->submit(bad).ok());
}

TEST_F(ConstrainedSamplingTest, AReasoningGateLeavesTheReasoningFreeAndTheGrammarHoldsAfterIt) {
  // The bundled model does not reason; tokens of its own free greedy story stand in for the tags. The output is
  // free (the story) up to and including the gate's end tokens, then the grammar holds.
  auto engine = make(256);
  auto spec = make(256, 4);
  ASSERT_TRUE(engine && spec);
  auto g = compile(GrammarSpec::Kind::kJsonSchema, kPersonSchema);
  ASSERT_TRUE(g);
  GenerateRequest r = request("Once upon a time", 160);
  const RequestOutput story = run(*engine, r);
  ASSERT_GE(story.new_tokens.size(), 8u) << story.text;
  // The end: two story tokens whose pair first occurs at positions 4-5 (skip on to a pair that occurs once).
  size_t at = 4;
  auto first_pair = [&](size_t i) {
    for (size_t j = 0; j + 1 < story.new_tokens.size(); ++j)
      if (story.new_tokens[j] == story.new_tokens[i] && story.new_tokens[j + 1] == story.new_tokens[i + 1]) return j;
    return i;
  };
  while (at + 2 < story.new_tokens.size() && first_pair(at) != at) ++at;
  ASSERT_EQ(first_pair(at), at);
  r.grammar = g;
  r.reasoning_gate = ReasoningGate{.end = {story.new_tokens[at], story.new_tokens[at + 1]}};
  for (Engine* e : {engine.get(), spec.get()}) {
    const RequestOutput out = run(*e, r);
    ASSERT_GT(out.new_tokens.size(), at + 2) << out.text;
    const std::vector<TokenId> reasoning(out.new_tokens.begin(), out.new_tokens.begin() + std::ptrdiff_t(at + 2));
    EXPECT_EQ(reasoning,
              std::vector<TokenId>(story.new_tokens.begin(), story.new_tokens.begin() + std::ptrdiff_t(at + 2)));
    const std::string answer = loaded_->tokenizer->decode(std::span<const TokenId>(out.new_tokens).subspan(at + 2));
    EXPECT_EQ(out.finish_reason, FinishReason::kStop) << out.text;
    expect_person(answer);
    EXPECT_TRUE(matches(g, answer)) << answer;
  }

  // A gate whose end never comes: the reasoning runs to max_tokens, its end tokens held off. A stop token from the
  // story ends the free request there; the gated one writes past it.
  GenerateRequest stopped = request("Once upon a time", 40);
  stopped.sampling.stop_token_ids = {story.new_tokens[3]};
  const RequestOutput free_stop = run(*engine, stopped);
  ASSERT_EQ(free_stop.finish_reason, FinishReason::kStop) << free_stop.text;
  ASSERT_LE(free_stop.num_output_tokens, 4);
  stopped.grammar = g;
  stopped.reasoning_gate = ReasoningGate{.end = {loaded_->tokenizer->bos_id(), loaded_->tokenizer->bos_id()}};
  const RequestOutput cut = run(*engine, stopped);
  EXPECT_EQ(cut.finish_reason, FinishReason::kLength) << cut.text;
  EXPECT_EQ(cut.num_output_tokens, 40);
  EXPECT_EQ(std::count(cut.new_tokens.begin(), cut.new_tokens.end(), story.new_tokens[3]), 0) << cut.text;

  // A start token the model does not take first: the grammar holds from the first token, as without a gate.
  GenerateRequest direct = request("Once upon a time", 160);
  direct.grammar = g;
  direct.sampling.logit_bias = {{story.new_tokens[at], -50.0f}};
  const RequestOutput plain = run(*engine, direct);
  direct.reasoning_gate = ReasoningGate{.end = {story.new_tokens[at]}, .start = story.new_tokens[at]};
  EXPECT_EQ(run(*engine, direct).new_tokens, plain.new_tokens);
  // Taken first (forced by its bias here), it opens the reasoning: the next tokens are free again.
  GenerateRequest opened = request("Once upon a time", 40);
  opened.grammar = g;
  opened.reasoning_gate = ReasoningGate{.end = {loaded_->tokenizer->bos_id()}, .start = story.new_tokens[0]};
  opened.sampling.logit_bias = {{story.new_tokens[0], 100.0f}};  // every draw prefers it
  const RequestOutput free = run(*engine, opened);
  EXPECT_EQ(free.finish_reason, FinishReason::kLength);
  EXPECT_EQ(std::count(free.new_tokens.begin(), free.new_tokens.end(), story.new_tokens[0]), 40) << free.text;

  // Refused: a gate without a grammar, or with tokens outside the vocabulary.
  GenerateRequest bad = request("Once upon a time", 8);
  bad.reasoning_gate = ReasoningGate{.end = {1}};
  EXPECT_FALSE(engine->submit(bad).ok());
  bad.grammar = g;
  bad.reasoning_gate = ReasoningGate{.end = {}};
  EXPECT_FALSE(engine->submit(bad).ok());
  bad.reasoning_gate = ReasoningGate{.end = {1}, .start = 1 << 20};
  EXPECT_FALSE(engine->submit(bad).ok());
}

}  // namespace
}  // namespace pagoda
