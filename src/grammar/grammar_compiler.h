// GrammarCompiler: GrammarSpec -> CompiledGrammar for one tokenizer's vocabulary, with an LRU cache keyed by the
// spec (GrammarSpec::cache_key), so that every request with the same schema shares one compiled grammar and its
// per-state token masks. Failures are cached too (a bad schema sent again costs a lookup), except a compile its
// caller stopped, which says nothing of the spec. Thread-safe: the server's compile thread compiles, the engine's
// matchers share the result.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_spec.h"
#include "grammar/token_vocabulary.h"

namespace pagoda::grammar {

class GrammarCompiler {
 public:
  // `cache_capacity`: compiled grammars kept (0: no cache).
  GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, size_t cache_capacity = 64, BuildLimits limits = {});

  // The compiled grammar, or the spec's error (kInvalidArgument), or kCancelled once `should_stop` (polled as the
  // compile works: BuildLimits::should_stop) said stop.
  Result<std::shared_ptr<const CompiledGrammar>> compile(const GrammarSpec& spec,
                                                         std::function<bool()> should_stop = {});
  // The cached result for `spec` without compiling (nullopt when it is not cached); counts as a hit.
  std::optional<Result<std::shared_ptr<const CompiledGrammar>>> cached(const GrammarSpec& spec);

  const std::shared_ptr<const TokenVocabulary>& vocabulary() const { return vocab_; }
  uint64_t num_hits() const;
  uint64_t num_misses() const;
  size_t num_cached() const;

 private:
  // cached() for a key already made (a spec's key holds its whole text).
  std::optional<Result<std::shared_ptr<const CompiledGrammar>>> lookup(const std::string& key);
  struct Entry {
    std::string key;
    std::shared_ptr<const CompiledGrammar> grammar;  // null when the spec failed
    Status error;
  };
  std::shared_ptr<const TokenVocabulary> vocab_;
  size_t capacity_;
  BuildLimits limits_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace pagoda::grammar
