// Test helpers for the grammar module: byte-level matching of whole strings, and brute-force masks.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocabulary.h"

namespace pagoda::grammar::testing {

inline std::shared_ptr<const CompiledGrammar> with_bytes(Grammar g) {
  return std::make_shared<const CompiledGrammar>(std::move(g), TokenVocabulary::bytes());
}

// Whether `text` is a complete sentence of the grammar.
inline bool matches(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_end();
}
// Whether `text` can be extended to a sentence.
inline bool is_prefix(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.accept_bytes(text);
}

}  // namespace pagoda::grammar::testing
