// CompiledGrammar: a Grammar bound to one tokenizer's vocabulary, with the per-state token masks
// (StateTokenMask) built on first use and kept for every later sequence under the same grammar. A state that
// reads like one built before (state_equivalence.h) for every token of the vocabulary shares its mask; one that
// reads like it for the shorter tokens takes those from it and walks only the longer ones. Shared between
// sequences and threads through shared_ptr<const CompiledGrammar>: the masks are built under std::call_once, the
// states to compare with under a mutex, everything else is immutable.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/state_token_mask.h"
#include "grammar/token_vocabulary.h"

namespace pagoda::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab);

  const Grammar& grammar() const { return grammar_; }
  const TokenVocabulary& vocabulary() const { return *vocab_; }
  const std::shared_ptr<const TokenVocabulary>& vocabulary_ptr() const { return vocab_; }

  // The token mask of `state` above an unknown caller; built by the first caller (others wait for it).
  const StateTokenMask& state_mask(uint32_t state) const;
  // Builds every state's mask now (e.g. on a worker before the first request), instead of on first use.
  void build_all_state_masks() const;

  size_t num_built_state_masks() const { return num_built_.load(std::memory_order_relaxed); }
  // Of those, the masks shared whole with an equivalent state, and those that walked only the longer tokens.
  size_t num_shared_state_masks() const { return num_shared_.load(std::memory_order_relaxed); }
  size_t num_partly_walked_state_masks() const { return num_partly_walked_.load(std::memory_order_relaxed); }
  size_t state_mask_bytes() const { return mask_bytes_.load(std::memory_order_relaxed); }

 private:
  Grammar grammar_;
  ReturnSites returns_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::shared_ptr<const StateTokenMask> build_mask(uint32_t state) const;

  std::unique_ptr<std::once_flag[]> once_;                              // [states]
  mutable std::vector<std::shared_ptr<const StateTokenMask>> masks_;  // [states], written once under once_[state]
  // Built states by state_local_key, the latest last: the states a new one is compared with.
  mutable std::mutex built_mu_;
  mutable std::unordered_map<uint64_t, std::vector<uint32_t>> built_by_key_;
  mutable std::atomic<size_t> num_built_{0};
  mutable std::atomic<size_t> num_shared_{0};
  mutable std::atomic<size_t> num_partly_walked_{0};
  mutable std::atomic<size_t> mask_bytes_{0};
};

}  // namespace pagoda::grammar
