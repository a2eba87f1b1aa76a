// TokenVocabulary: the byte strings of a tokenizer's tokens, arranged for mask computation: sorted, and as a
// trie laid out in preorder (walking it with a grammar state prunes every token under a dead prefix at once).
// Built once per tokenizer and shared read-only by every compiled grammar and matcher (immutable, thread-safe).
//
// The string slice (LLGuidance's "slices"): the text tokens that free JSON string content takes whole, each a run
// of well-formed UTF-8 characters with no '"', no '\\' and no control byte (< 0x20). A grammar state that takes
// each such character back to itself accepts every one of them, so its mask is the slice plus a walk of the other
// tokens alone, kept as a vocabulary of their own (outside_string_slice()).
//
// A token is one of: text (non-empty bytes: allowed when the grammar accepts them), a stop token (EOS and the
// end-of-turn tokens: allowed exactly when the grammar can end) or neither (control tokens, tokens without
// bytes: never allowed under a grammar).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace pagoda {
class Tokenizer;
}

namespace pagoda::grammar {

struct TrieNode {
  uint8_t byte;              // the byte on the edge from the parent
  uint8_t utf8_below;        // 1 when every path below, read from a character boundary, is well-formed UTF-8
  uint16_t depth;            // 1 for the children of the (implicit) root
  uint32_t subtree_end;      // index of the first node after this node's subtree
  uint32_t tokens_begin;     // sorted index of the first token in this subtree
  uint32_t num_tokens_here;  // tokens whose bytes end exactly here: sorted indices [tokens_begin, +num)
};

class TokenVocabulary {
 public:
  // `bytes_by_id[id]`: the token's bytes ("" for tokens never allowed); `stop_ids`: tokens that end generation.
  // Tokens longer than 65535 bytes are never allowed.
  TokenVocabulary(std::vector<std::string> bytes_by_id, std::vector<TokenId> stop_ids);
  // The bytes of each token as it appears inside a decoded text (Tokenizer::token_bytes with no previous token);
  // control tokens are never allowed, Tokenizer::ends_generation tokens are the stop tokens.
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const Tokenizer& tokenizer);
  // 256 one-byte tokens (id = byte value) and one stop token (id 256): masks over bytes, for tools and tests.
  static std::shared_ptr<const TokenVocabulary> bytes();

  int32_t vocab_size() const { return int32_t(offsets_.size()) - 1; }
  size_t mask_words() const { return (size_t(vocab_size()) + 31) / 32; }  // uint32 words of a token mask
  std::string_view token_bytes(TokenId id) const {
    return {blob_.data() + offsets_[size_t(id)], offsets_[size_t(id) + 1] - offsets_[size_t(id)]};
  }
  bool is_stop(TokenId id) const { return is_stop_[size_t(id)] != 0; }
  const std::vector<TokenId>& stop_ids() const { return stop_ids_; }

  // Text tokens sorted by bytes (ties by id).
  int32_t num_sorted() const { return int32_t(sorted_ids_.size()); }
  TokenId sorted_id(int32_t idx) const { return sorted_ids_[size_t(idx)]; }
  std::string_view sorted_bytes(int32_t idx) const { return token_bytes(sorted_ids_[size_t(idx)]); }
  // Sorted index of the first token in the subtree whose first node is `node_idx` (num_sorted() past the end).
  uint32_t subtree_tokens_begin(uint32_t node_idx) const {
    return node_idx < trie_.size() ? trie_[node_idx].tokens_begin : uint32_t(sorted_ids_.size());
  }
  const std::vector<TrieNode>& trie() const { return trie_; }
  // The bytes on the edges below `node_idx` (its descendants' bytes, not its own), as 4 x 64 bits: a state that loops
  // on all of them accepts every token of the subtree without walking it.
  const std::array<uint64_t, 4>& subtree_bytes(uint32_t node_idx) const { return subtree_bytes_[node_idx]; }
  // Whether every path below `node_idx`, read from a character boundary, is well-formed UTF-8 (a token may end
  // inside a character): a state that takes every ASCII byte below and every well-formed character, coming back to
  // itself, accepts every token of the subtree without walking it. Kept in the node, which the walk reads anyway.
  bool utf8_below(uint32_t node_idx) const { return trie_[node_idx].utf8_below != 0; }
  // The most bytes of any token in the subtree whose first node is `node_idx` (the node's own depth included): a
  // walk that classifies only tokens of at least n bytes skips a subtree below n.
  uint32_t subtree_max_bytes(uint32_t node_idx) const { return subtree_max_bytes_[node_idx]; }
  // The text tokens of at least `n` bytes (any order).
  std::span<const TokenId> tokens_of_at_least(uint32_t n) const {
    const size_t from = n < by_length_begin_.size() ? by_length_begin_[n] : ids_by_length_.size();
    return std::span<const TokenId>(ids_by_length_).subspan(from);
  }
  // Whether `byte` may stand in a token of the string slice (an ASCII byte of it, or any byte >= 0x80 of a
  // well-formed character).
  static constexpr bool in_string_slice(uint8_t byte) { return byte >= 0x20 && byte != '"' && byte != '\\'; }
  // Bit `id` set for every token of the string slice: [mask_words()].
  const std::vector<uint32_t>& string_slice_bits() const { return string_slice_bits_; }
  // The text tokens outside the string slice, as a vocabulary of their own (the same ids and stop tokens; its
  // sorted order is a subsequence of this one's); nullptr when this vocabulary is such a rest itself, or its slice
  // is empty.
  const TokenVocabulary* outside_string_slice() const { return outside_slice_.get(); }
  // The index in this vocabulary's sorted order of outside_string_slice()'s sorted token `k`.
  int32_t sorted_index_outside_slice(int32_t k) const { return outside_slice_sorted_[size_t(k)]; }
  // Bit `id` set for every text token (the tokens of the sorted order): [mask_words()].
  const std::vector<uint32_t>& text_token_bits() const { return text_token_bits_; }
  int32_t max_token_bytes() const { return max_token_bytes_; }

 private:
  // `split_string_slice`: whether to find the string slice and build the vocabulary of the tokens outside it.
  TokenVocabulary(std::vector<std::string> bytes_by_id, std::vector<TokenId> stop_ids, bool split_string_slice);

  std::string blob_;
  std::vector<size_t> offsets_;  // [vocab_size + 1] into blob_
  std::vector<uint8_t> is_stop_;
  std::vector<TokenId> stop_ids_;
  std::vector<TokenId> sorted_ids_;
  std::vector<TrieNode> trie_;
  std::vector<std::array<uint64_t, 4>> subtree_bytes_;  // [trie nodes]
  std::vector<uint16_t> subtree_max_bytes_;             // [trie nodes]
  std::vector<TokenId> ids_by_length_;                  // text tokens by byte length, ascending
  std::vector<size_t> by_length_begin_;                 // [max_token_bytes + 2]: first index of each length
  std::vector<uint32_t> text_token_bits_;
  std::vector<uint32_t> string_slice_bits_;               // [mask_words()]
  std::unique_ptr<const TokenVocabulary> outside_slice_;  // the text tokens outside the slice
  std::vector<int32_t> outside_slice_sorted_;             // [outside_slice_->num_sorted()]: index in sorted_ids_
  int32_t max_token_bytes_ = 0;
};

}  // namespace pagoda::grammar
