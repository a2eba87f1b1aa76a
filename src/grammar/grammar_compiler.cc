// GrammarCompiler (grammar_compiler.h): the LRU cache around grammar_from_spec.
#include "grammar/grammar_compiler.h"

namespace pagoda::grammar {

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, size_t cache_capacity,
                                 BuildLimits limits)
    : vocab_(std::move(vocab)), capacity_(cache_capacity), limits_(limits) {}

std::optional<Result<std::shared_ptr<const CompiledGrammar>>> GrammarCompiler::cached(const GrammarSpec& spec) {
  return lookup(spec.cache_key());
}

std::optional<Result<std::shared_ptr<const CompiledGrammar>>> GrammarCompiler::lookup(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  const Entry& e = *it->second;
  if (e.grammar) return Result<std::shared_ptr<const CompiledGrammar>>(e.grammar);
  return Result<std::shared_ptr<const CompiledGrammar>>(e.error);
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::compile(const GrammarSpec& spec,
                                                                        std::function<bool()> should_stop) {
  const std::string key = spec.cache_key();
  if (auto hit = lookup(key)) return std::move(*hit);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++misses_;
  }
  // Compiled outside the lock: other requests go on meanwhile (two requests with a new spec may both compile it).
  BuildLimits limits = limits_;
  limits.should_stop = std::move(should_stop);
  Result<Grammar> g = grammar_from_spec(spec, limits);
  if (!g.ok() && g.status().code() == StatusCode::kCancelled) return g.status();
  Entry entry{key, nullptr, Status()};
  if (g.ok()) {
    entry.grammar = std::make_shared<const CompiledGrammar>(std::move(g).value(), vocab_);
  } else {
    entry.error = g.status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (capacity_ > 0 && !index_.count(key)) {
    lru_.push_front(entry);
    index_[key] = lru_.begin();
    while (lru_.size() > capacity_) {
      index_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }
  if (entry.grammar) return entry.grammar;
  return entry.error;
}

uint64_t GrammarCompiler::num_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}
uint64_t GrammarCompiler::num_misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}
size_t GrammarCompiler::num_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace pagoda::grammar
