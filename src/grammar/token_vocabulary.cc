// TokenVocabulary (token_vocabulary.h): sorting the token byte strings and building the preorder trie.
#include "grammar/token_vocabulary.h"

#include <algorithm>

#include "core/check.h"
#include "grammar/utf8_automaton.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::grammar {

namespace {

// A token of the string slice: well-formed UTF-8 characters, whole, with no byte outside in_string_slice.
bool whole_in_string_slice(std::string_view bytes) {
  uint8_t k = utf8::kBoundary;
  for (const char c : bytes) {
    if (!TokenVocabulary::in_string_slice(uint8_t(c))) return false;
    k = utf8::next(k, uint8_t(c));
    if (k == utf8::kDead) return false;
  }
  return k == utf8::kBoundary;
}

}  // namespace

TokenVocabulary::TokenVocabulary(std::vector<std::string> bytes_by_id, std::vector<TokenId> stop_ids)
    : TokenVocabulary(std::move(bytes_by_id), std::move(stop_ids), true) {}

TokenVocabulary::TokenVocabulary(std::vector<std::string> bytes_by_id, std::vector<TokenId> stop_ids,
                                 bool split_string_slice) {
  constexpr size_t kMaxTokenBytes = 65535;
  const size_t n = bytes_by_id.size();
  offsets_.reserve(n + 1);
  offsets_.push_back(0);
  is_stop_.assign(n, 0);
  for (const TokenId id : stop_ids) {
    PAGODA_CHECK(id >= 0 && size_t(id) < n, "stop token {} is outside the vocabulary [0, {})", id, n);
    if (!is_stop_[size_t(id)]) stop_ids_.push_back(id);
    is_stop_[size_t(id)] = 1;
  }
  for (size_t id = 0; id < n; ++id) {
    std::string& b = bytes_by_id[id];
    if (is_stop_[id] || b.size() > kMaxTokenBytes) b.clear();
    blob_ += b;
    offsets_.push_back(blob_.size());
    if (!b.empty()) sorted_ids_.push_back(TokenId(id));
    max_token_bytes_ = std::max(max_token_bytes_, int32_t(b.size()));
  }
  std::sort(sorted_ids_.begin(), sorted_ids_.end(), [&](TokenId a, TokenId b) {
    const std::string_view x = token_bytes(a), y = token_bytes(b);
    return x != y ? x < y : a < b;
  });

  // Preorder trie: each token shares the nodes of its common prefix with the previous token; `open` holds the
  // nodes on the current path (index per depth - 1).
  std::vector<uint32_t> open;
  std::string_view prev;
  for (uint32_t k = 0; k < sorted_ids_.size(); ++k) {
    const std::string_view w = token_bytes(sorted_ids_[k]);
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < w.size() && prev[lcp] == w[lcp]) ++lcp;
    while (open.size() > lcp) {
      trie_[open.back()].subtree_end = uint32_t(trie_.size());
      open.pop_back();
    }
    if (lcp == w.size()) {  // same bytes as the previous token (lcp == prev.size() too, as prev <= w)
      trie_[open.back()].num_tokens_here++;
    } else {
      for (size_t d = lcp; d < w.size(); ++d) {
        open.push_back(uint32_t(trie_.size()));
        trie_.push_back({uint8_t(w[d]), 0, uint16_t(d + 1), 0, k, d + 1 == w.size() ? 1u : 0u});
      }
    }
    prev = w;
  }
  while (!open.empty()) {
    trie_[open.back()].subtree_end = uint32_t(trie_.size());
    open.pop_back();
  }
  // Children come after their parent in preorder: one backward pass folds each node into its parent's set.
  subtree_bytes_.assign(trie_.size(), {0, 0, 0, 0});
  subtree_max_bytes_.assign(trie_.size(), 0);
  for (uint32_t i = uint32_t(trie_.size()); i-- > 0;) {
    subtree_max_bytes_[i] = std::max(subtree_max_bytes_[i], trie_[i].depth);
    for (uint32_t c = i + 1; c < trie_[i].subtree_end; c = trie_[c].subtree_end)
      subtree_max_bytes_[i] = std::max(subtree_max_bytes_[i], subtree_max_bytes_[c]);
    for (uint32_t c = i + 1; c < trie_[i].subtree_end; c = trie_[c].subtree_end) {
      for (int32_t w = 0; w < 4; ++w) subtree_bytes_[i][size_t(w)] |= subtree_bytes_[c][size_t(w)];
      subtree_bytes_[i][trie_[c].byte >> 6] |= uint64_t(1) << (trie_[c].byte & 63);
    }
  }
  // The same backward pass for well-formed UTF-8: bit k of ok[i] says every path below node i is well-formed when
  // read from decoder state k.
  std::vector<uint8_t> ok(trie_.size(), 0xFF);
  for (uint32_t i = uint32_t(trie_.size()); i-- > 0;) {
    for (uint32_t c = i + 1; c < trie_[i].subtree_end; c = trie_[c].subtree_end) {
      for (uint8_t k = 0; k < utf8::kNumStates; ++k) {
        const uint8_t nk = utf8::next(k, trie_[c].byte);
        if (nk == utf8::kDead || !((ok[c] >> nk) & 1)) ok[i] &= uint8_t(~(1u << k));
      }
    }
  }
  for (size_t i = 0; i < trie_.size(); ++i) trie_[i].utf8_below = (ok[i] >> utf8::kBoundary) & 1;
  ids_by_length_ = sorted_ids_;
  std::stable_sort(ids_by_length_.begin(), ids_by_length_.end(),
                   [&](TokenId a, TokenId b) { return token_bytes(a).size() < token_bytes(b).size(); });
  by_length_begin_.assign(size_t(max_token_bytes_) + 2, ids_by_length_.size());
  for (size_t k = ids_by_length_.size(); k-- > 0;) by_length_begin_[token_bytes(ids_by_length_[k]).size()] = k;
  for (size_t n = by_length_begin_.size() - 1; n-- > 0;)
    by_length_begin_[n] = std::min(by_length_begin_[n], by_length_begin_[n + 1]);
  text_token_bits_.assign(mask_words(), 0);
  for (const TokenId id : sorted_ids_) text_token_bits_[size_t(id) >> 5] |= 1u << (id & 31);

  string_slice_bits_.assign(mask_words(), 0);
  if (!split_string_slice) return;
  std::vector<std::string> outside(n);
  bool any_in_slice = false;
  for (const TokenId id : sorted_ids_) {
    const std::string_view b = token_bytes(id);
    if (whole_in_string_slice(b)) {
      string_slice_bits_[size_t(id) >> 5] |= 1u << (id & 31);
      any_in_slice = true;
    } else {
      outside[size_t(id)] = std::string(b);
    }
  }
  if (!any_in_slice) return;
  outside_slice_.reset(new TokenVocabulary(std::move(outside), stop_ids_, false));
  // Both orders sort by (bytes, id): the rest's is a subsequence of this one's.
  outside_slice_sorted_.reserve(size_t(outside_slice_->num_sorted()));
  int32_t k = 0;
  for (int32_t j = 0; j < outside_slice_->num_sorted(); ++j) {
    while (sorted_ids_[size_t(k)] != outside_slice_->sorted_id(j)) ++k;
    outside_slice_sorted_.push_back(k);
  }
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.vocab_size();
  std::vector<std::string> token_bytes(static_cast<size_t>(n));
  std::vector<TokenId> stops;
  for (TokenId id = 0; id < n; ++id) {
    if (tokenizer.ends_generation(id)) {
      stops.push_back(id);
    } else if (!tokenizer.is_control(id)) {
      token_bytes[size_t(id)] = tokenizer.token_bytes(id, -1);
    }
  }
  return std::make_shared<const TokenVocabulary>(std::move(token_bytes), std::move(stops));
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::bytes() {
  std::vector<std::string> token_bytes(257);
  for (int32_t b = 0; b < 256; ++b) token_bytes[size_t(b)] = std::string(1, char(b));
  return std::make_shared<const TokenVocabulary>(std::move(token_bytes), std::vector<TokenId>{256});
}

}  // namespace pagoda::grammar
