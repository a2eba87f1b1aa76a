// Random benchmark prompts.
#include "bench/random_prompt.h"

namespace pagoda::bench {

void append_random_tokens(const Tokenizer& tokenizer, int32_t count, std::mt19937_64& rng,
                          std::vector<TokenId>& prompt) {
  std::uniform_int_distribution<TokenId> any(0, tokenizer.vocab_size() - 1);
  const size_t target = prompt.size() + static_cast<size_t>(count);
  while (prompt.size() < target) {
    const TokenId t = any(rng);
    if (!tokenizer.is_control(t)) prompt.push_back(t);
  }
}

std::vector<TokenId> random_prompt(const Tokenizer& tokenizer, int32_t length, std::mt19937_64& rng) {
  std::vector<TokenId> prompt{tokenizer.bos_id()};
  append_random_tokens(tokenizer, length - 1, rng, prompt);
  return prompt;
}

}  // namespace pagoda::bench
