// NgramTable: which token followed each short n-gram (n = 1..max_n tokens) in text seen before, and how often:
// the memory behind n-gram drafts that reach past the sequence itself (llama.cpp's lookup caches, vLLM's suffix
// decoding): a corpus given at start-up, and the outputs of earlier requests. Bounded: at most max_entries n-grams,
// each keeping its kSlots most frequent followers. When the n-grams being learned fill it, the table starts a new
// generation: the previous one is dropped and the current one kept for lookups, so a long-running server holds at
// most two generations and forgets the oldest text first. Owns no thread; not safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>

#include "core/types.h"

namespace pagoda {

class NgramTable {
 public:
  static constexpr int32_t kMaxN = 8;
  static constexpr int32_t kSlots = 4;  // followers kept per n-gram (a new one displaces the rarest)

  // 1 <= max_n <= kMaxN; max_entries >= 1 (per generation).
  NgramTable(int32_t max_n, int64_t max_entries);

  // Learns every (n-gram, next token) pair of `tokens` whose next token is at index >= `first_next` (the n-gram
  // itself may start before it: a request's output continues its prompt's last words).
  void add(std::span<const TokenId> tokens, int64_t first_next = 0);

  struct Guess {
    TokenId token = 0;
    int32_t n = 0;       // tokens of the context that matched
    int32_t count = 0;   // times `token` followed them
    int32_t total = 0;   // times anything did (kept followers only)
  };
  // The most frequent follower of the longest suffix of `context` (n from max_n down to min_n) that was seen with
  // a follower that has at least `min_count` sightings and at least `min_share` of the n-gram's; none otherwise.
  // The current generation answers first, then the previous one.
  std::optional<Guess> next(std::span<const TokenId> context, int32_t min_n, int32_t min_count,
                            double min_share) const;

  int32_t max_n() const { return max_n_; }
  int64_t num_entries() const { return int64_t(current_.size() + previous_.size()); }
  // The current generation is at its bound: the next new n-gram starts another.
  bool full() const { return int64_t(current_.size()) >= max_entries_; }

 private:
  struct Followers {
    TokenId token[kSlots] = {};
    uint32_t count[kSlots] = {};
  };
  using Map = std::unordered_map<uint64_t, Followers>;  // key: a hash of (n, the n tokens)

  static uint64_t key(std::span<const TokenId> ngram);
  std::optional<Guess> best(const Map& map, uint64_t k, int32_t n) const;

  int32_t max_n_;
  int64_t max_entries_;
  Map current_;
  Map previous_;
};

}  // namespace pagoda
