// Tests for apply_token_mask and token_allowed (src/grammar/token_mask.h): disallowed logits and padded
// vocabulary rows become -infinity, allowed ones keep their values, the count of allowed tokens.
#include "grammar/token_mask.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace pagoda::grammar {
namespace {

TEST(TokenMask, AppliesToLogitsAndPaddedRows) {
  std::vector<uint32_t> mask(3, 0);  // 96 tokens
  for (const TokenId id : {0, 31, 32, 70}) mask[size_t(id) >> 5] |= 1u << (id & 31);
  mask[1] = 0xFFFFFFFFu;  // 32..63 all allowed
  std::vector<float> logits(100);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(i);
  EXPECT_EQ(apply_token_mask(logits, mask), 2 + 32 + 1);
  for (size_t i = 0; i < logits.size(); ++i) {
    const bool allowed = i == 0 || i == 31 || (i >= 32 && i < 64) || i == 70;
    EXPECT_EQ(std::isinf(logits[i]) && logits[i] < 0, !allowed) << i;
    if (allowed) {
      EXPECT_EQ(logits[i], float(i));
    }
  }
  EXPECT_TRUE(token_allowed(mask, 70));
  EXPECT_FALSE(token_allowed(mask, 71));
  EXPECT_FALSE(token_allowed(mask, 96));  // past the mask
  EXPECT_FALSE(token_allowed(mask, -1));
}

}  // namespace
}  // namespace pagoda::grammar
