// StoryTokensTest: the bundled model and engine helpers (BundledEngineTest) with the test story (PAGODA_TEST_STORY)
// tokenized once per suite, BOS first, as the perplexity tests read it.
#pragma once

#include <fstream>
#include <sstream>
#include <vector>

#include "support/bundled_engine_fixture.h"

namespace pagoda::eval {

class StoryTokensTest : public BundledEngineTest {
 protected:
  static void SetUpTestSuite() {
    BundledEngineTest::SetUpTestSuite();
    std::ifstream in(PAGODA_TEST_STORY);
    std::ostringstream text;
    text << in.rdbuf();
    tokens_ = new std::vector<TokenId>(loaded_->tokenizer->encode(text.str(), true));
  }
  static void TearDownTestSuite() {
    delete tokens_;
    tokens_ = nullptr;
    BundledEngineTest::TearDownTestSuite();
  }
  static inline std::vector<TokenId>* tokens_ = nullptr;
};

}  // namespace pagoda::eval
