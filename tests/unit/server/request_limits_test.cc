// request_limits.h: each limit of one request, as every protocol's request meets it: token ids against the
// vocabulary, the context with and without max_tokens (and each default), min_tokens against max_tokens given or
// implied, the queue's room for n choices and embeddings inputs, and the response's size.
#include "server/request_limits.h"

#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.vocab_size = 100;
  l.max_seq_len = 64;
  l.max_queue = 4;
  l.batch_size = 8;
  l.max_request_tokens = 1000;
  return l;
}

CompletionParams params(std::optional<int32_t> max_tokens, int32_t min_tokens = 0) {
  CompletionParams p;
  if (max_tokens) {
    p.max_tokens_given = true;
    p.sampling.max_tokens = *max_tokens;
  }
  p.sampling.min_tokens = min_tokens;
  return p;
}

TEST(RequestLimitsTest, TokenIdsOutsideTheVocabularyNameTheFirst) {
  const std::vector<TokenId> ok = {0, 5, 99}, bad = {3, 100, 200};
  EXPECT_FALSE(check_token_ids(ok, 100, "prompt", "prompt"));
  const std::optional<ApiError> e = check_token_ids(bad, 100, "prompt", "prompt");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "prompt token id 100 is outside the vocabulary (0..99)");
  EXPECT_EQ(e->param, "prompt");
  EXPECT_EQ(e->http_status, 400);
}

TEST(RequestLimitsTest, TheContextHoldsThePromptAndMaxTokensAndTheDefaultFillsWhatIsLeft) {
  CompletionParams given = params(10);
  EXPECT_FALSE(apply_length_limits(limits(), 54, DefaultMaxTokens::kSixteen, &given));
  EXPECT_EQ(given.sampling.max_tokens, 10);
  CompletionParams too_many = params(11);
  const std::optional<ApiError> over = apply_length_limits(limits(), 54, DefaultMaxTokens::kSixteen, &too_many);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->code, "context_length_exceeded");
  EXPECT_EQ(over->param, "max_tokens");
  const std::optional<ApiError> full = apply_length_limits(limits(), 64, DefaultMaxTokens::kRestOfContext, &given);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->param, "prompt");

  CompletionParams sixteen = params(std::nullopt), rest = params(std::nullopt), short_room = params(std::nullopt);
  EXPECT_FALSE(apply_length_limits(limits(), 10, DefaultMaxTokens::kSixteen, &sixteen));
  EXPECT_EQ(sixteen.sampling.max_tokens, 16);
  EXPECT_FALSE(apply_length_limits(limits(), 10, DefaultMaxTokens::kRestOfContext, &rest));
  EXPECT_EQ(rest.sampling.max_tokens, 54);
  EXPECT_FALSE(apply_length_limits(limits(), 60, DefaultMaxTokens::kSixteen, &short_room));
  EXPECT_EQ(short_room.sampling.max_tokens, 4);
}

TEST(RequestLimitsTest, MinTokensIsAtMostMaxTokensGivenOrImplied) {
  CompletionParams given = params(2, 3);
  const std::optional<ApiError> e = apply_length_limits(limits(), 5, DefaultMaxTokens::kSixteen, &given);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "'min_tokens' must be at most max_tokens (2), got 3");
  EXPECT_EQ(e->param, "min_tokens");
  CompletionParams implied = params(std::nullopt, 20);  // the default 16 is fewer
  const std::optional<ApiError> i = apply_length_limits(limits(), 5, DefaultMaxTokens::kSixteen, &implied);
  ASSERT_TRUE(i);
  EXPECT_EQ(i->message, "'min_tokens' (20) is more than the 16 tokens the request may generate");
  CompletionParams fits = params(std::nullopt, 20);
  EXPECT_FALSE(apply_length_limits(limits(), 5, DefaultMaxTokens::kRestOfContext, &fits));
}

TEST(RequestLimitsTest, TheQueueMustHoldEveryEntryOfTheRequest) {
  EXPECT_FALSE(check_queue_entries(limits(), 4, 8));  // 4 prompts x one group of 8
  const std::optional<ApiError> e = check_queue_entries(limits(), 3, 9);  // 3 x 2 groups
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "n");
  EXPECT_NE(e->message.find("needs 6 queue entries"), std::string::npos) << e->message;
  EXPECT_FALSE(check_pooling_queue(limits(), 4, "inputs", "input"));
  ASSERT_TRUE(check_pooling_queue(limits(), 5, "inputs", "input"));
  EXPECT_EQ(check_pooling_queue(limits(), 5, "inputs", "input")->param, "input");
  EXPECT_FALSE(check_embedding_length(limits(), 0, 63));
  ASSERT_TRUE(check_embedding_length(limits(), 2, 64));
  EXPECT_EQ(check_embedding_length(limits(), 2, 64)->message,
            "input 2 has 64 tokens; this model's context holds 63 for an input to embed");
}

TEST(RequestLimitsTest, AResponseHoldsAtMostMaxRequestTokensAndAnImpliedMaxTokensIsLowered) {
  CompletionParams given = params(100);
  given.n = 4;
  const auto ok = bound_request_work(limits(), &given, 2, 10);  // 2 prompts x 4 x 100
  ASSERT_TRUE(std::holds_alternative<int64_t>(ok));
  EXPECT_EQ(std::get<int64_t>(ok), 800);
  CompletionParams too_many = params(200);
  too_many.n = 4;
  const auto refused = bound_request_work(limits(), &too_many, 2, 10);
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
  EXPECT_EQ(std::get<ApiError>(refused).param, "max_tokens");
  CompletionParams implied = params(std::nullopt);
  implied.sampling.max_tokens = 5000;  // the rest of a long context
  const auto lowered = bound_request_work(limits(), &implied, 1, 10);
  ASSERT_TRUE(std::holds_alternative<int64_t>(lowered));
  EXPECT_EQ(implied.sampling.max_tokens, 1000);
}

}  // namespace
}  // namespace pagoda::server
