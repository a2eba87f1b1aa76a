// random_prompt: a benchmark prompt of random token ids (BOS first, no control tokens), so that timing does
// not depend on what the text says and two prompts share no prefix unless a benchmark makes them.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/types.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

// `length` tokens in all, BOS included (length >= 1).
std::vector<TokenId> random_prompt(const Tokenizer& tokenizer, int32_t length, std::mt19937_64& rng);
// `count` random non-control tokens appended to `prompt` (a request's own tokens after a shared prefix).
void append_random_tokens(const Tokenizer& tokenizer, int32_t count, std::mt19937_64& rng,
                          std::vector<TokenId>& prompt);

}  // namespace pagoda::bench
