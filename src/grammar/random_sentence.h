// random_sentence: draws a random complete sentence of a compiled grammar, byte by byte, from the bytes its
// matcher allows; after `soft_max_bytes` it steers to the nearest end (each byte chosen to minimize the shortest
// completion), so it ends even on grammars with unbounded repetition. For tests, fuzzing and the `grammar`
// debug tool (outputs checked by an external validator); not used when serving.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "grammar/compiled_grammar.h"

namespace pagoda::grammar {

struct RandomSentenceOptions {
  uint64_t soft_max_bytes = 64;    // past this, head for the end
  uint64_t hard_max_bytes = 4096;  // give up (nullopt) past this
  double stop_probability = 0.2;   // at a point where the sentence may end, end with this probability
};

// `grammar` must be compiled over TokenVocabulary::bytes(). nullopt when the sentence could not be finished within
// hard_max_bytes.
std::optional<std::string> random_sentence(const std::shared_ptr<const CompiledGrammar>& grammar, std::mt19937_64& rng,
                                           const RandomSentenceOptions& options = {});

}  // namespace pagoda::grammar
