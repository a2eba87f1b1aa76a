// Tests for TokenVocabulary (src/grammar/token_vocabulary.h): the preorder trie's per-node facts the mask builder
// relies on, here whether every path below a node is well-formed UTF-8 read from a character boundary; the string
// slice and the vocabulary of the tokens outside it.
#include "grammar/token_vocabulary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace pagoda::grammar {
namespace {

// The trie node reached by `prefix` (its last byte), or -1.
int32_t node_of(const TokenVocabulary& vocab, std::string_view prefix) {
  const std::vector<TrieNode>& trie = vocab.trie();
  uint32_t i = 0, end = uint32_t(trie.size());
  int32_t found = -1;
  for (size_t d = 0; d < prefix.size(); ++d) {
    found = -1;
    for (uint32_t c = i; c < end; c = trie[c].subtree_end) {
      if (trie[c].byte == uint8_t(prefix[d])) {
        found = int32_t(c);
        break;
      }
    }
    if (found < 0) return -1;
    i = uint32_t(found) + 1;
    end = trie[uint32_t(found)].subtree_end;
  }
  return found;
}

TEST(TokenVocabulary, Utf8BelowEachNode) {
  // "a" has below it: "é" (whole), "\xE2\x82" (a character cut short: still well-formed as a prefix).
  // "b" has below it a lone continuation byte. "c" a surrogate. "d" an overlong. "e" a byte never in UTF-8.
  // "\xC3" has below it the continuation byte of "é", but read from a boundary that byte is malformed.
  const std::vector<std::string> tokens = {"a",  "aé",         "a\xE2\x82",  "b",     "b\xA9", "c", "c\xED\xA0\x80",
                                           "d",  "d\xC0\xAF",  "e",          "e\xFF", "\xC3", "\xC3\xA9", "f😀g",
                                           "fz", "f\xF4\x8F\xBF\xBF", "h\xF4\x90\x80\x80", ""};
  const TokenVocabulary vocab(tokens, {TokenId(tokens.size() - 1)});
  auto below = [&](std::string_view prefix) {
    const int32_t n = node_of(vocab, prefix);
    EXPECT_GE(n, 0) << prefix;
    return n >= 0 && vocab.utf8_below(uint32_t(n));
  };
  EXPECT_TRUE(below("a"));
  EXPECT_TRUE(below("aé"));  // a leaf: nothing below
  EXPECT_FALSE(below("b"));
  EXPECT_FALSE(below("c"));
  EXPECT_FALSE(below("d"));
  EXPECT_FALSE(below("e"));
  EXPECT_FALSE(below("\xC3"));
  EXPECT_TRUE(below("f"));   // an emoji then ASCII, ASCII, U+10FFFF
  EXPECT_FALSE(below("h"));  // above U+10FFFF
}

TEST(TokenVocabulary, StringSliceHoldsWholeCharactersWithoutQuotesEscapesOrControlBytes) {
  // ids:                          0    1      2     3        4       5     6       7            8      9
  std::vector<std::string> bytes = {"ab", "a b", "\"", "a\"b", "a\\n", "\n", "\x7F~", "\xC3\xA9t", "\xC3", "\xA9",
                                    //  10 (U+20AC)      11 (overlong)  12 (surrogate)    13    14: stop  15: never
                                    "\xE2\x82\xAC", "\xC0\xAF", "\xED\xA0\x80", "ab", "", ""};
  const TokenVocabulary vocab(bytes, {14});
  const std::vector<TokenId> in_slice = {0, 1, 6, 7, 10, 13};
  std::vector<TokenId> got;
  for (TokenId id = 0; id < vocab.vocab_size(); ++id) {
    if (vocab.string_slice_bits()[size_t(id) >> 5] >> (id & 31) & 1) got.push_back(id);
  }
  EXPECT_EQ(got, in_slice);
  // The rest: the other text tokens, same ids, in this vocabulary's sorted order.
  const TokenVocabulary* outside = vocab.outside_string_slice();
  ASSERT_NE(outside, nullptr);
  EXPECT_EQ(outside->outside_string_slice(), nullptr);
  EXPECT_EQ(outside->vocab_size(), vocab.vocab_size());
  ASSERT_EQ(outside->num_sorted(), vocab.num_sorted() - int32_t(in_slice.size()));
  std::vector<TokenId> rest;
  int32_t prev = -1;
  for (int32_t k = 0; k < outside->num_sorted(); ++k) {
    const TokenId id = outside->sorted_id(k);
    rest.push_back(id);
    const int32_t index = vocab.sorted_index_outside_slice(k);
    EXPECT_GT(index, prev);
    EXPECT_EQ(vocab.sorted_id(index), id);
    EXPECT_EQ(outside->token_bytes(id), vocab.token_bytes(id));
    prev = index;
  }
  std::sort(rest.begin(), rest.end());
  EXPECT_EQ(rest, (std::vector<TokenId>{2, 3, 4, 5, 8, 9, 11, 12}));
  EXPECT_TRUE(outside->is_stop(14));
}

}  // namespace
}  // namespace pagoda::grammar
