// Tests for SamplingParams::validate (src/sampling/sampling_params.h): defaults pass, each bad field is
// rejected with a message that names it.
#include "sampling/sampling_params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace pagoda {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string error_of(const std::function<void(SamplingParams&)>& change) {
  SamplingParams params;
  change(params);
  Status status = params.validate();
  EXPECT_FALSE(status.ok());
  return status.message();
}

bool is_valid(const std::function<void(SamplingParams&)>& change) {
  SamplingParams params;
  change(params);
  return params.validate().ok();
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SamplingParamsTest, DefaultsAreValid) {
  EXPECT_TRUE(SamplingParams{}.validate().ok());
  EXPECT_FALSE(SamplingParams{}.is_greedy());
}

TEST(SamplingParamsTest, BoundaryValuesAreValid) {
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.temperature = 0.0f; }));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.top_k = 0; }));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.top_p = 1e-9f; }));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.min_p = 1.0f; }));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.presence_penalty = -2.0f; }));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.frequency_penalty = 2.0f; }));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.max_tokens = 1; }));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.stop = std::vector<std::string>(16, "x"); }));
}

TEST(SamplingParamsTest, ErrorsNameTheField) {
  EXPECT_EQ(error_of([](SamplingParams& p) { p.top_p = 1.5f; }), "top_p must be in (0, 1], got 1.5");
  EXPECT_THAT(error_of([](SamplingParams& p) { p.top_p = 0.0f; }), StartsWith("top_p"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.top_p = kNaN; }), StartsWith("top_p"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.temperature = -0.1f; }), StartsWith("temperature"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.temperature = kInf; }), StartsWith("temperature"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.temperature = kNaN; }), StartsWith("temperature"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.top_k = -1; }), StartsWith("top_k"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.min_p = -0.01f; }), StartsWith("min_p"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.min_p = 1.01f; }), StartsWith("min_p"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.repetition_penalty = 0.0f; }), StartsWith("repetition_penalty"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.repetition_penalty = kNaN; }), StartsWith("repetition_penalty"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.presence_penalty = 2.5f; }),
              StartsWith("presence_penalty must be in [-2, 2]"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.frequency_penalty = -2.5f; }), StartsWith("frequency_penalty"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.max_tokens = 0; }), StartsWith("max_tokens"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.stop = {"a", ""}; }), StartsWith("stop[1] must not be empty"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.stop = std::vector<std::string>(17, "x"); }),
              AllOf(StartsWith("stop"), HasSubstr("16"), HasSubstr("17")));
}

TEST(SamplingParamsTest, LogitBiasMinTokensAndStopTokenIds) {
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.logit_bias = {{0, -100.0f}, {5, 100.0f}}; }));
  EXPECT_THAT(error_of([](SamplingParams& p) {
                p.logit_bias = {{3, 100.5f}};
              }),
              AllOf(StartsWith("logit_bias"), HasSubstr("[-100, 100]")));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.logit_bias = {{3, kNaN}}; }), StartsWith("logit_bias"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }), StartsWith("logit_bias"));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.min_tokens = p.max_tokens; }));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.min_tokens = p.max_tokens + 1; }), StartsWith("min_tokens"));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.min_tokens = -1; }), StartsWith("min_tokens"));
  EXPECT_TRUE(is_valid([](SamplingParams& p) { p.stop_token_ids = {2, 13}; }));
  EXPECT_THAT(error_of([](SamplingParams& p) { p.stop_token_ids = {-2}; }), StartsWith("stop_token_ids"));
}

TEST(SamplingParamsTest, GreedyMeansTemperatureZero) {
  SamplingParams params;
  params.temperature = 0.0f;
  EXPECT_TRUE(params.is_greedy());
}

}  // namespace
}  // namespace pagoda
