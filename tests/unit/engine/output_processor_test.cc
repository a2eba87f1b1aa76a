// The OutputProcessor with a fake tokenizer (a handful of pieces, no model file): text streams token by token with
// nothing held but an unfinished character or a possible stop string, end-of-generation tokens have no text, a
// length finish releases what was held and a cancel does not; and, driven with a real Scheduler the way the engine
// steps them, a stop string found in a step's text finishes its sequence in that same step, its blocks freed.
#include "engine/output_processor.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler.h"

namespace pagoda {
namespace {

// Token ids: 0 BOS, 1 EOS, then pieces; 7 and 8 are the two bytes of "é".
class FakeTokenizer : public Tokenizer {
 public:
  std::vector<TokenId> encode(std::string_view, bool, bool) const override { return {}; }
  std::string token_bytes(TokenId token, TokenId) const override { return kPieces[size_t(token)]; }
  std::string decode(std::span<const TokenId> tokens) const override {
    std::string s;
    for (TokenId t : tokens) s += kPieces[size_t(t)];
    return s;
  }
  int32_t vocab_size() const override { return int32_t(std::size(kPieces)); }
  TokenId bos_id() const override { return 0; }
  TokenId eos_id() const override { return 1; }
  bool ends_generation(TokenId token) const override { return token == 1; }
  bool is_control(TokenId token) const override { return token <= 1; }

  static constexpr const char* kPieces[] = {"", "", "Once", " upon", " a", " time", " there", "\xC3", "\xA9", "!"};
};

constexpr TokenId kOnce = 2, kUpon = 3, kA = 4, kTime = 5, kThere = 6, kEHigh = 7, kELow = 8, kBang = 9;

class OutputProcessorTest : public ::testing::Test {
 protected:
  std::shared_ptr<RequestStream> add(RequestId id, std::vector<std::string> stop = {}, bool ignore_eos = false) {
    auto stream = std::make_shared<RequestStream>();
    SamplingParams p;
    p.stop = std::move(stop);
    p.ignore_eos = ignore_eos;
    output_.add_request(id, stream, /*last_prompt_token=*/0, p);
    return stream;
  }
  // One token of request `id` through the processor, as a step would: text first, then the event.
  RequestOutput push(const std::shared_ptr<RequestStream>& stream, RequestId id, TokenId token, bool finished = false,
                     FinishReason reason = FinishReason::kLength, bool* stopped = nullptr) {
    Sequence seq(id, GenerateRequest{{0}, {}, 0, -1, false, nullptr}, 4, 64, 0, 0);
    std::vector<SampledToken> sampled{SampledToken{&seq, token, {}, {}, false}};
    output_.find_stop_strings(sampled);
    if (stopped) *stopped = sampled[0].completes_stop_string;
    std::vector<SeqEvent> events(1);
    events[0].request_id = id;
    events[0].token = token;
    events[0].finished = finished || sampled[0].completes_stop_string;
    events[0].finish_reason = sampled[0].completes_stop_string ? FinishReason::kStop : reason;
    output_.publish(events);
    std::optional<RequestOutput> out = stream->try_next();
    EXPECT_TRUE(out);
    return out ? std::move(*out) : RequestOutput{};
  }

  FakeTokenizer tokenizer_;
  OutputProcessor output_{&tokenizer_};
};

TEST_F(OutputProcessorTest, TextStreamsPerTokenAndAnUnfinishedCharacterWaitsForItsLastByte) {
  auto stream = add(1);
  EXPECT_EQ(push(stream, 1, kOnce).text, "Once");
  EXPECT_EQ(push(stream, 1, kUpon).text, " upon");
  const RequestOutput half = push(stream, 1, kEHigh);
  EXPECT_EQ(half.text, "");
  EXPECT_EQ(half.new_tokens, std::vector<TokenId>{kEHigh});
  EXPECT_EQ(push(stream, 1, kELow).text, "\xC3\xA9");
  const RequestOutput eos = push(stream, 1, 1, true, FinishReason::kStop);
  EXPECT_EQ(eos.text, "");  // EOS has no text
  EXPECT_TRUE(eos.finished);
  EXPECT_EQ(output_.num_requests(), 0);
}

TEST_F(OutputProcessorTest, ALengthFinishReleasesWhatWasHeldAndACancelDoesNot) {
  auto a = add(1, {" time!"});
  EXPECT_EQ(push(a, 1, kA).text, " a");
  EXPECT_EQ(push(a, 1, kTime).text, "");                                         // could still become the stop string
  EXPECT_EQ(push(a, 1, kEHigh, true, FinishReason::kLength).text, " time\xC3");  // it did not: all of it is final
  auto b = add(2, {" time!"});
  push(b, 2, kTime);
  std::vector<SeqEvent> cancel(1);
  cancel[0].request_id = 2;
  cancel[0].finished = true;
  cancel[0].finish_reason = FinishReason::kAbort;
  output_.publish(cancel);
  const RequestOutput aborted = *b->try_next();
  EXPECT_TRUE(aborted.finished);
  EXPECT_EQ(aborted.text, "");
  EXPECT_TRUE(aborted.new_tokens.empty());
}

TEST_F(OutputProcessorTest, AStopStringAcrossTokensIsFoundByTheTokenThatCompletesIt) {
  auto stream = add(1, {"a time"});
  bool stopped = false;
  EXPECT_EQ(push(stream, 1, kUpon, false, FinishReason::kLength, &stopped).text, " upon");
  EXPECT_FALSE(stopped);
  EXPECT_EQ(push(stream, 1, kA, false, FinishReason::kLength, &stopped).text, " ");  // "a" may start the stop
  EXPECT_FALSE(stopped);
  const RequestOutput last = push(stream, 1, kTime, false, FinishReason::kLength, &stopped);
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(last.finished);
  EXPECT_EQ(last.finish_reason, FinishReason::kStop);
  EXPECT_EQ(last.text, "");  // the stop string itself is dropped
}

TEST_F(OutputProcessorTest, WithIgnoreEosTheEndOfGenerationTokenHasItsText) {
  auto stream = add(1, {}, /*ignore_eos=*/true);
  EXPECT_EQ(push(stream, 1, 1).text, "");  // the piece is empty, but it went through the decoder
  EXPECT_EQ(push(stream, 1, kBang).text, "!");
}

TEST_F(OutputProcessorTest, LogprobsAndLogitsPassThroughToTheClient) {
  auto stream = add(1);
  std::vector<SeqEvent> events(1);
  events[0].request_id = 1;
  events[0].token = kOnce;
  events[0].logprobs = TokenLogprobs{kOnce, -0.5f, {{kOnce, -0.5f}}};
  events[0].logits = {1.0f, 2.0f};
  events[0].prompt_logits = {3.0f, 4.0f};
  events[0].num_prompt_tokens = 1;
  events[0].num_output_tokens = 1;
  output_.publish(events);
  const RequestOutput out = *stream->try_next();
  ASSERT_EQ(out.logprobs.size(), 1u);
  EXPECT_EQ(out.logprobs[0].logprob, -0.5f);
  EXPECT_EQ(out.logits, (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(out.prompt_logits, (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(out.num_output_tokens, 1);
}

TEST(OutputProcessorWithScheduler, AStopStringFinishesItsSequenceAndFreesItsBlocksInTheSameStep) {
  // Two requests decode the same fake tokens; one stops at " a", the other runs on. Each step goes as the
  // engine runs it: sample, find stop strings, update, publish.
  FakeTokenizer tokenizer;
  KvCacheManager::Options o;
  o.num_blocks = 16;
  o.block_size = 4;
  o.enable_prefix_cache = false;
  KvCacheManager kv(o);
  Scheduler scheduler(SchedulerConfig{.max_num_seqs = 4, .max_batched_tokens = 16}, kv, {1});
  OutputProcessor output(&tokenizer);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (RequestId id : {1, 2}) {
    GenerateRequest r;
    r.prompt = {0, kOnce};
    r.sampling.max_tokens = 10;
    if (id == 1) r.sampling.stop = {" a"};
    streams.push_back(std::make_shared<RequestStream>());
    output.add_request(id, streams.back(), r.prompt.back(), r.sampling);
    scheduler.add(std::make_unique<Sequence>(id, std::move(r), 4, 64, uint64_t(id), 0));
  }
  const TokenId script[] = {kUpon, kA, kTime};
  int64_t now_us = 0;
  for (TokenId next : script) {
    const SchedulePlan plan = scheduler.schedule(++now_us);
    std::vector<SampledToken> sampled;
    for (const ScheduledSeq& s : plan.seqs)
      if (s.samples) sampled.push_back(SampledToken{s.seq, next, {}, {}, false});
    output.find_stop_strings(sampled);
    std::vector<SeqEvent> events = scheduler.update(plan, sampled, ++now_us);
    output.publish(events);
    if (next == kA) {
      // The step that completed " a": request 1 is finished, gone from the scheduler, its blocks back.
      EXPECT_EQ(scheduler.find(1), nullptr);
      EXPECT_EQ(scheduler.num_running(), 1);
      EXPECT_EQ(kv.pool().num_used(), 1);  // request 2's one block (3 tokens computed)
    }
  }
  const RequestOutput stopped = streams[0]->wait_all();
  EXPECT_EQ(stopped.finish_reason, FinishReason::kStop);
  EXPECT_EQ(stopped.text, " upon");
  EXPECT_EQ(stopped.new_tokens, (std::vector<TokenId>{kUpon, kA}));
  EXPECT_FALSE(streams[1]->finished());
  std::vector<SeqEvent> cancel{*scheduler.abort(2, ++now_us)};
  EXPECT_EQ(cancel[0].num_output_tokens, 3);
  output.publish(cancel);
  EXPECT_EQ(streams[1]->wait_all().text, " upon a time");
  EXPECT_EQ(kv.pool().num_used(), 0);
}

}  // namespace
}  // namespace pagoda
