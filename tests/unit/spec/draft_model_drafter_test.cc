// DraftModelDrafter on the bundled model drafting for itself: its drafts are the model's own greedy continuation
// (the engine tests' oracle: a plain greedy loop over Model::forward); a later proposal for a longer
// sequence computes only what its prefix cache lacks; a pool of exactly one sequence keeps working as it evicts;
// drafts stop at the context's end.
#include "spec/draft_model_drafter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "support/bundled_model_fixture.h"
#include "support/reference_greedy.h"
#include "support/throwing_model.h"

namespace pagoda {
namespace {

class DraftModelDrafterTest : public BundledModelTest {
 protected:
  // The model's greedy continuation of `tokens`, `n` tokens, from the engine tests' oracle (a plain loop over
  // Model::forward); these prompts do not reach an end-of-text token that soon.
  static std::vector<TokenId> greedy(const std::vector<TokenId>& tokens, int32_t n) {
    std::vector<TokenId> out = testing::reference_greedy(*loaded_->model, *loaded_->tokenizer, tokens, n);
    EXPECT_EQ(int32_t(out.size()), n);
    return out;
  }
  static std::vector<TokenId> prompt() {
    return loaded_->tokenizer->encode("Lily and Ben went to the park. They", true);
  }
};

TEST_F(DraftModelDrafterTest, DraftsAreTheModelsGreedyContinuation) {
  ThreadPool pool(2);
  DraftModelDrafter d(*loaded_->model, pool, {.num_blocks = 32, .block_size = 16, .max_context = 256});
  std::vector<TokenId> drafts{7, 7, 7};
  std::vector<float> chances;
  d.propose(prompt(), 5, drafts, chances);
  EXPECT_EQ(drafts, greedy(prompt(), 5));
}

TEST_F(DraftModelDrafterTest, ALaterProposalComputesOnlyWhatItsCacheLacks) {
  ThreadPool pool(1);
  DraftModelDrafter d(*loaded_->model, pool, {.num_blocks = 32, .block_size = 4, .max_context = 128});
  std::vector<TokenId> tokens = prompt();
  tokens.resize(12);  // three full blocks of 4
  std::vector<TokenId> drafts;
  std::vector<float> chances;
  d.propose(tokens, 4, drafts, chances);
  ASSERT_EQ(drafts.size(), 4u);
  EXPECT_EQ(d.num_computed_tokens(), 12 + 3);  // the prompt, then a pass for each draft after the first
  // The verifier kept two drafts and corrected the third: the sequence grew by three tokens. Blocks 0-2 are
  // cached (the third holds positions 8-11, not the last token's); only positions 12-14 are new.
  tokens.insert(tokens.end(), drafts.begin(), drafts.begin() + 2);
  tokens.push_back((drafts[2] + 1) % loaded_->model->config().vocab_size);
  const int64_t before = d.num_computed_tokens();
  d.propose(tokens, 4, drafts, chances);
  EXPECT_EQ(drafts, greedy(tokens, 4));
  EXPECT_EQ(d.num_computed_tokens() - before, 3 + 3);
}

TEST_F(DraftModelDrafterTest, APoolOfOneSequenceEvictsAndStillDraftsRight) {
  ThreadPool pool(1);
  const int32_t blocks = DraftModelDrafter::min_blocks(64, 8);
  DraftModelDrafter d(*loaded_->model, pool, {.num_blocks = blocks, .block_size = 8, .max_context = 64});
  const std::vector<TokenId> a =
      loaded_->tokenizer->encode("Once upon a time, there was a little dog named Max.", true);
  const std::vector<TokenId> b = prompt();
  std::vector<TokenId> drafts;
  std::vector<float> chances;
  for (int round = 0; round < 3; ++round) {
    d.propose(a, 3, drafts, chances);
    EXPECT_EQ(drafts, greedy(a, 3)) << "round " << round;
    d.propose(b, 3, drafts, chances);
    EXPECT_EQ(drafts, greedy(b, 3)) << "round " << round;
  }
}

TEST_F(DraftModelDrafterTest, APassThatThrowsGivesItsBlocksBack) {
  // A pool of exactly one sequence: had the failed proposal kept its blocks, the next could not be placed.
  const ThrowingModel model(*loaded_->model, /*throw_at=*/2);
  ThreadPool pool(1);
  const int32_t blocks = DraftModelDrafter::min_blocks(64, 8);
  DraftModelDrafter d(model, pool, {.num_blocks = blocks, .block_size = 8, .max_context = 64});
  std::vector<TokenId> tokens = prompt();
  std::vector<TokenId> drafts;
  std::vector<float> chances;
  EXPECT_THROW(d.propose(tokens, 3, drafts, chances), std::bad_alloc);
  EXPECT_TRUE(drafts.empty());
  tokens.resize(56, tokens.back());  // with its drafts, a sequence that needs every block of the pool
  d.propose(tokens, 3, drafts, chances);
  EXPECT_EQ(drafts, greedy(tokens, 3));
}

TEST_F(DraftModelDrafterTest, DraftsStopAtTheContextsEnd) {
  ThreadPool pool(1);
  DraftModelDrafter d(*loaded_->model, pool, {.num_blocks = 8, .block_size = 4, .max_context = 16});
  std::vector<TokenId> tokens = prompt();
  tokens.resize(14);
  std::vector<TokenId> drafts;
  std::vector<float> chances;
  d.propose(tokens, 5, drafts, chances);
  EXPECT_EQ(drafts.size(), 2u);  // positions 14 and 15
  tokens.resize(16);
  d.propose(tokens, 5, drafts, chances);
  EXPECT_TRUE(drafts.empty());
}

}  // namespace
}  // namespace pagoda
