// random_sentence (random_sentence.h).
#include "grammar/random_sentence.h"

#include "core/check.h"
#include "grammar/grammar_matcher.h"

namespace pagoda::grammar {

std::optional<std::string> random_sentence(const std::shared_ptr<const CompiledGrammar>& grammar, std::mt19937_64& rng,
                                           const RandomSentenceOptions& options) {
  PAGODA_CHECK(grammar->vocabulary().vocab_size() == 257, "random_sentence needs a grammar over byte tokens");
  GrammarMatcher m(grammar, 0);
  std::string out;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  while (out.size() < options.hard_max_bytes) {
    const bool steer = out.size() >= options.soft_max_bytes;
    if (m.can_end() && (m.is_complete() || steer || unit(rng) < options.stop_probability)) return out;
    const std::bitset<256> allowed = m.allowed_next_bytes();
    std::vector<uint8_t> choices;
    if (steer) {
      uint64_t best = ~uint64_t(0);
      for (uint32_t b = 0; b < 256; ++b) {
        if (!allowed.test(b)) continue;
        GrammarMatcher next = m;
        next.accept_token(TokenId(b));
        const uint64_t left = next.min_bytes_to_complete();
        if (left < best) {
          best = left;
          choices.clear();
        }
        if (left == best) choices.push_back(uint8_t(b));
      }
    } else {
      for (uint32_t b = 0; b < 256; ++b) {
        if (allowed.test(b)) choices.push_back(uint8_t(b));
      }
    }
    if (choices.empty()) return std::nullopt;  // cannot happen: every reachable configuration can finish
    const uint8_t b = choices[std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng)];
    m.accept_token(TokenId(b));
    out += char(b);
  }
  return std::nullopt;
}

}  // namespace pagoda::grammar
