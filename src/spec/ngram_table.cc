// NgramTable: hashed n-gram keys (XXH3-64 of the n token ids; a collision can only cost a rejected draft, never a
// wrong token, since every draft is verified) and their few most frequent followers.
#include "spec/ngram_table.h"

#include <xxhash.h>

#include <algorithm>

#include "core/check.h"

namespace pagoda {

NgramTable::NgramTable(int32_t max_n, int64_t max_entries) : max_n_(max_n), max_entries_(max_entries) {
  PAGODA_CHECK(max_n >= 1 && max_n <= kMaxN, "n-gram table: n up to {}", max_n);
  PAGODA_CHECK(max_entries >= 1, "n-gram table: {} entries", max_entries);
}

uint64_t NgramTable::key(std::span<const TokenId> ngram) {
  // The length seeds the hash: "a b" and "b" with the same tail are different keys.
  return XXH3_64bits_withSeed(ngram.data(), ngram.size_bytes(), uint64_t(ngram.size()));
}

void NgramTable::add(std::span<const TokenId> tokens, int64_t first_next) {
  const int64_t num_tokens = int64_t(tokens.size());
  for (int64_t next = std::max<int64_t>(first_next, 1); next < num_tokens; ++next) {
    const TokenId follower = tokens[size_t(next)];
    for (int32_t n = 1; n <= max_n_ && n <= next; ++n) {
      const uint64_t k = key(tokens.subspan(size_t(next - n), size_t(n)));
      auto it = current_.find(k);
      if (it == current_.end()) {
        if (int64_t(current_.size()) >= max_entries_) {  // a new generation; the oldest text goes
          previous_ = std::move(current_);
          current_ = Map();
        }
        it = current_.emplace(k, Followers{}).first;
        // An n-gram the previous generation knew keeps its counts: forgetting is for n-grams no longer seen.
        if (auto old = previous_.find(k); old != previous_.end()) it->second = old->second;
      }
      Followers& f = it->second;
      int32_t slot = -1, rarest = 0;
      for (int32_t s = 0; s < kSlots; ++s) {
        if (f.count[s] > 0 && f.token[s] == follower) {
          slot = s;
          break;
        }
        if (f.count[s] < f.count[rarest]) rarest = s;
      }
      if (slot < 0) {
        slot = rarest;
        f.token[slot] = follower;
        f.count[slot] = 0;
      }
      if (f.count[slot] < UINT32_MAX) ++f.count[slot];
    }
  }
}

std::optional<NgramTable::Guess> NgramTable::best(const Map& map, uint64_t k, int32_t n) const {
  const auto it = map.find(k);
  if (it == map.end()) return std::nullopt;
  const Followers& f = it->second;
  Guess g{.n = n};
  int64_t total = 0;
  for (int32_t s = 0; s < kSlots; ++s) {
    total += f.count[s];
    // Ties: the lower token id, so a guess never depends on the order followers were first seen in.
    if (f.count[s] > uint32_t(g.count) || (f.count[s] > 0 && f.count[s] == uint32_t(g.count) && f.token[s] < g.token)) {
      g.token = f.token[s];
      g.count = int32_t(std::min<uint32_t>(f.count[s], INT32_MAX));
    }
  }
  if (g.count == 0) return std::nullopt;
  g.total = int32_t(std::min<int64_t>(total, INT32_MAX));
  return g;
}

std::optional<NgramTable::Guess> NgramTable::next(std::span<const TokenId> context, int32_t min_n, int32_t min_count,
                                                  double min_share) const {
  for (int32_t n = std::min<int64_t>(max_n_, int64_t(context.size())); n >= std::max(min_n, 1); --n) {
    const uint64_t k = key(context.last(size_t(n)));
    std::optional<Guess> g = best(current_, k, n);
    if (!g) g = best(previous_, k, n);
    if (g && g->count >= min_count && double(g->count) >= min_share * double(g->total)) return g;
  }
  return std::nullopt;
}

}  // namespace pagoda
