// GrammarMatcher (grammar_matcher.h): stepping, the mask (cached per-state masks plus a walk over the uncertain
// tokens with the real stacks), rollback and frame garbage collection.
#include "grammar/grammar_matcher.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, int32_t max_rollback_tokens)
    : grammar_(std::move(grammar)),
      max_rollback_tokens_(std::max(0, max_rollback_tokens)),
      stepper_(grammar_->grammar(), pool_) {
  Entry first;
  const Grammar& g = grammar_->grammar();
  stepper_.start(g.rules[g.root_rule].start_state, kRootBottom, first.set);
  overflowed_ = first.set.overflowed;
  history_.push_back(std::move(first));
}

GrammarMatcher::GrammarMatcher(const GrammarMatcher& other)
    : grammar_(other.grammar_),
      max_rollback_tokens_(other.max_rollback_tokens_),
      pool_(other.pool_),
      stepper_(grammar_->grammar(), pool_),
      history_(other.history_),
      gc_threshold_(other.gc_threshold_),
      overflowed_(other.overflowed_) {}

GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& other) {
  if (this != &other) {
    grammar_ = other.grammar_;
    max_rollback_tokens_ = other.max_rollback_tokens_;
    pool_ = other.pool_;
    history_ = other.history_;
    gc_threshold_ = other.gc_threshold_;
    overflowed_ = other.overflowed_;
    stepper_.bind(grammar_->grammar(), pool_);
  }
  return *this;
}

GrammarMatcher::GrammarMatcher(GrammarMatcher&& other) noexcept
    : grammar_(other.grammar_),
      max_rollback_tokens_(other.max_rollback_tokens_),
      pool_(std::move(other.pool_)),
      stepper_(grammar_->grammar(), pool_),
      history_(std::move(other.history_)),
      gc_threshold_(other.gc_threshold_),
      overflowed_(other.overflowed_) {}

GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&& other) noexcept {
  if (this != &other) {
    grammar_ = other.grammar_;
    max_rollback_tokens_ = other.max_rollback_tokens_;
    pool_ = std::move(other.pool_);
    history_ = std::move(other.history_);
    gc_threshold_ = other.gc_threshold_;
    overflowed_ = other.overflowed_;
    stepper_.bind(grammar_->grammar(), pool_);
  }
  return *this;
}

bool GrammarMatcher::advance(const StackSet& from, std::string_view bytes, StackSet& out) const {
  if (overflowed_) return false;
  StackSet a = from, b;
  for (size_t i = 0; i < bytes.size(); ++i) {
    stepper_.step(a, uint8_t(bytes[i]), b);
    if (b.overflowed) {
      overflowed_ = true;
      return false;
    }
    if (b.tops.empty() && !(i + 1 == bytes.size() && b.can_end)) return false;
    std::swap(a, b);
  }
  out = std::move(a);
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  const Entry& cur = history_.back();
  if (cur.stopped) return false;
  Entry next;
  if (!advance(cur.set, bytes, next.set)) return false;
  push(std::move(next));
  return true;
}

bool GrammarMatcher::accept_token(TokenId token) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  if (token < 0 || token >= vocab.vocab_size()) return false;
  if (vocab.is_stop(token)) {
    if (!can_end() || history_.back().stopped || overflowed_) return false;
    Entry next{history_.back().set, true};
    push(std::move(next));
    return true;
  }
  const std::string_view bytes = vocab.token_bytes(token);
  if (bytes.empty()) return false;
  return accept_bytes(bytes);
}

bool GrammarMatcher::is_token_allowed(TokenId token) const {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  if (token < 0 || token >= vocab.vocab_size()) return false;
  const Entry& cur = history_.back();
  if (vocab.is_stop(token)) return can_end() && !overflowed_;
  const std::string_view bytes = vocab.token_bytes(token);
  StackSet out;
  return !cur.stopped && !bytes.empty() && advance(cur.set, bytes, out);
}

void GrammarMatcher::push(Entry entry) {
  history_.push_back(std::move(entry));
  while (int32_t(history_.size()) > max_rollback_tokens_ + 1) history_.pop_front();
  if (pool_.size() > gc_threshold_) collect_garbage();
}

bool GrammarMatcher::rollback(int32_t num_tokens) {
  if (num_tokens < 0 || num_tokens > num_rollback_tokens()) return false;
  for (int32_t i = 0; i < num_tokens; ++i) history_.pop_back();
  return true;
}

void GrammarMatcher::collect_garbage() {
  std::vector<uint32_t> roots;
  for (const Entry& e : history_) {
    for (const StackTop& t : e.set.tops) roots.push_back(t.parent);
  }
  const std::vector<uint32_t> remap = pool_.compact(roots);
  for (Entry& e : history_) {
    for (StackTop& t : e.set.tops) {
      if (t.parent < kUnknownBottom) t.parent = remap[t.parent];
    }
  }
  gc_threshold_ = std::max<uint32_t>(4096, pool_.size() * 4);
}

void GrammarMatcher::fill_mask(std::span<uint32_t> mask) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  PAGODA_CHECK(mask.size() >= vocab.mask_words(), "token mask has {} words, the vocabulary needs {}", mask.size(),
               vocab.mask_words());
  const Entry& cur = history_.back();
  bool cleared = false;
  if (!cur.stopped) {
    top_states_.clear();
    for (const StackTop& t : cur.set.tops) top_states_.push_back(t.state);
    std::sort(top_states_.begin(), top_states_.end());
    top_states_.erase(std::unique(top_states_.begin(), top_states_.end()), top_states_.end());
    uncertain_.clear();
    for (const uint32_t s : top_states_) {
      const StateTokenMask& m = grammar_->state_mask(s);
      if (!cleared) {
        // The first state's bitset is copied rather than or-ed into a cleared mask.
        if (!m.accepted_bits.empty()) {
          std::copy(m.accepted_bits.begin(), m.accepted_bits.end(), mask.begin());
          std::fill(mask.begin() + std::ptrdiff_t(m.accepted_bits.size()), mask.end(), 0u);
        } else {
          std::fill(mask.begin(), mask.end(), 0u);
          for (const TokenId id : m.accepted_ids) mask[size_t(id) >> 5] |= 1u << (id & 31);
        }
        cleared = true;
      } else if (!m.accepted_bits.empty()) {
        for (size_t w = 0; w < m.accepted_bits.size(); ++w) mask[w] |= m.accepted_bits[w];
      } else {
        for (const TokenId id : m.accepted_ids) mask[size_t(id) >> 5] |= 1u << (id & 31);
      }
      uncertain_.insert(uncertain_.end(), m.uncertain.begin(), m.uncertain.end());
    }
    if (!uncertain_.empty()) {
      if (top_states_.size() > 1) {
        std::sort(uncertain_.begin(), uncertain_.end());
        uncertain_.erase(std::unique(uncertain_.begin(), uncertain_.end()), uncertain_.end());
      }
      check_uncertain(cur.set, mask);
    }
  }
  if (!cleared || overflowed_) {
    std::fill(mask.begin(), mask.end(), 0u);
    if (overflowed_) return;
  }
  if (can_end()) {
    for (const TokenId id : vocab.stop_ids()) mask[size_t(id) >> 5] |= 1u << (id & 31);
  }
}

// Walks the uncertain tokens (in sorted order, so each shares its prefix's configurations with the previous one)
// with the real stacks.
void GrammarMatcher::check_uncertain(const StackSet& set, std::span<uint32_t> mask) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  if (levels_.size() < size_t(vocab.max_token_bytes()) + 1) levels_.resize(size_t(vocab.max_token_bytes()) + 1);
  levels_[0] = set;
  std::string_view prev;
  size_t valid = 0;             // levels_[1..valid] hold prev's prefixes
  size_t dead_at = ~size_t(0);  // prev's configuration died after this many bytes
  for (const int32_t k : uncertain_) {
    const TokenId id = vocab.sorted_id(k);
    if (mask[size_t(id) >> 5] & (1u << (id & 31))) continue;
    const std::string_view w = vocab.sorted_bytes(k);
    size_t lcp = 0;
    const size_t lim = std::min(prev.size(), w.size());
    while (lcp < lim && prev[lcp] == w[lcp]) ++lcp;
    if (lcp >= dead_at) {
      // prev's configuration died after dead_at bytes, which w shares: w can only be that very prefix, ending
      // exactly where the grammar may end.
      if (w.size() == dead_at && levels_[dead_at].can_end) mask[size_t(id) >> 5] |= 1u << (id & 31);
      continue;
    }
    size_t d = std::min(lcp, valid);
    prev = w;
    dead_at = ~size_t(0);
    for (; d < w.size(); ++d) {
      stepper_.step(levels_[d], uint8_t(w[d]), levels_[d + 1]);
      if (levels_[d + 1].overflowed) {
        overflowed_ = true;
        return;
      }
      if (levels_[d + 1].tops.empty()) {
        dead_at = d + 1;
        ++d;
        break;
      }
    }
    valid = d;
    if (d == w.size() && (!levels_[d].tops.empty() || levels_[d].can_end)) mask[size_t(id) >> 5] |= 1u << (id & 31);
  }
}

std::bitset<256> GrammarMatcher::allowed_next_bytes() const {
  std::bitset<256> out;
  const Entry& cur = history_.back();
  if (cur.stopped) return out;
  StackSet next;
  for (uint32_t b = 0; b < 256; ++b) {
    stepper_.step(cur.set, uint8_t(b), next);
    if (!next.tops.empty() || next.can_end) out.set(b);
  }
  return out;
}

uint64_t GrammarMatcher::min_bytes_to_complete() const {
  const Entry& cur = history_.back();
  if (can_end()) return 0;
  const Grammar& g = grammar_->grammar();
  uint64_t best = ~uint64_t(0);
  for (const StackTop& t : cur.set.tops) {
    uint64_t total = g.states[t.state].min_bytes;
    for (uint32_t p = t.parent; p < kUnknownBottom; p = pool_[p].parent) total += g.states[pool_[p].state].min_bytes;
    best = std::min(best, total);
  }
  return best;
}

}  // namespace pagoda::grammar
