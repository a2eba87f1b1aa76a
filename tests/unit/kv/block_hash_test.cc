// Tests for the chained block hash (src/kv/block_hash.h): determinism, chaining (one changed token changes its
// block's hash and every later one, never an earlier one), the extra key, and append_block_hashes continuing
// a chain.
#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace pagoda {
namespace {

constexpr int32_t kBlockSize = 4;

std::vector<BlockHash> hashes_of(const std::vector<TokenId>& tokens, uint64_t extra_key = 0) {
  std::vector<BlockHash> out;
  append_block_hashes(tokens, kBlockSize, int32_t(tokens.size()) / kBlockSize, extra_key, out);
  return out;
}

std::vector<TokenId> iota_tokens(int32_t n) {
  std::vector<TokenId> tokens(static_cast<size_t>(n));
  std::iota(tokens.begin(), tokens.end(), 100);
  return tokens;
}

TEST(BlockHash, SamePrefixGivesSameHashes) {
  const std::vector<TokenId> a = iota_tokens(16);
  std::vector<TokenId> b = a;
  b.push_back(7);  // a partial block is not hashed
  EXPECT_EQ(hashes_of(a), hashes_of(b));
  EXPECT_EQ(hashes_of(a).size(), 4u);
}

TEST(BlockHash, OneChangedTokenChangesThatBlockAndEveryLaterOne) {
  const std::vector<TokenId> a = iota_tokens(20);
  const std::vector<BlockHash> base = hashes_of(a);
  for (int32_t changed_pos = 0; changed_pos < 20; ++changed_pos) {
    std::vector<TokenId> b = a;
    b[size_t(changed_pos)] += 1;
    const std::vector<BlockHash> changed = hashes_of(b);
    const int32_t changed_block_idx = changed_pos / kBlockSize;
    for (int32_t j = 0; j < 5; ++j) {
      if (j < changed_block_idx)
        EXPECT_EQ(changed[size_t(j)], base[size_t(j)]) << "pos " << changed_pos << " block " << j;
      else
        EXPECT_NE(changed[size_t(j)], base[size_t(j)]) << "pos " << changed_pos << " block " << j;
    }
  }
}

TEST(BlockHash, SameBlockTokensUnderDifferentParentsDiffer) {
  // Blocks 1 and 2 hold the same tokens but follow different prefixes.
  const std::vector<TokenId> tokens = {1, 2, 3, 4, 9, 9, 9, 9, 9, 9, 9, 9};
  const std::vector<BlockHash> h = hashes_of(tokens);
  EXPECT_NE(h[1], h[2]);
  const std::vector<TokenId> block = {9, 9, 9, 9};
  EXPECT_EQ(hash_block(h[0], block, 0), h[1]);
  EXPECT_EQ(hash_block(h[1], block, 0), h[2]);
  EXPECT_NE(hash_block(kRootBlockHash, block, 0), h[1]);
}

TEST(BlockHash, ExtraKeyChangesEveryHash) {
  const std::vector<TokenId> a = iota_tokens(12);
  const std::vector<BlockHash> key0 = hashes_of(a, 0), key1 = hashes_of(a, 1), key1_again = hashes_of(a, 1);
  EXPECT_EQ(key1, key1_again);
  for (size_t j = 0; j < key0.size(); ++j) EXPECT_NE(key0[j], key1[j]) << "block " << j;
}

TEST(BlockHash, AppendContinuesTheChain) {
  const std::vector<TokenId> a = iota_tokens(24);
  std::vector<BlockHash> in_steps;
  append_block_hashes(a, kBlockSize, 2, 5, in_steps);
  append_block_hashes(a, kBlockSize, 0, 5, in_steps);
  append_block_hashes(a, kBlockSize, 3, 5, in_steps);
  EXPECT_EQ(in_steps, hashes_of(std::vector<TokenId>(a.begin(), a.begin() + 20), 5));
}

TEST(BlockHashDeathTest, TooFewTokensIsABug) {
  const std::vector<TokenId> a = iota_tokens(7);
  std::vector<BlockHash> out;
  EXPECT_DEATH(append_block_hashes(a, kBlockSize, 2, 0, out), "do not fill");
}

}  // namespace
}  // namespace pagoda
