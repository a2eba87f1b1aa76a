// ServePrompt and its sources: the prompts a serving benchmark sends (random token ids or text, a JSONL file, a
// ShareGPT file), each with the number of tokens to generate. Prompt lengths are counted with the tokenizer of
// the model the server runs (the caller loads it); files are read whole, errors name the file, line and field.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

struct ServePrompt {
  std::string text;                // sent as text when non-empty
  std::vector<TokenId> token_ids;  // sent as ids (/v1/completions only) when `text` is empty
  int32_t prompt_len = 0;          // tokens, BOS included, as the tokenizer counts them
  int32_t output_len = 0;          // max_tokens of the request
};

struct RandomPromptOptions {
  int32_t num_prompts = 0;
  int32_t input_len = 0;  // tokens, BOS included
  int32_t output_len = 0;
  double range_ratio = 0;  // lengths drawn uniformly from [len * (1 - r), len * (1 + r)], r in [0, 1)
  bool as_text = false;    // text (for chat) instead of token ids; its re-encoded length stays within a few tokens
  uint64_t seed = 0;
};

// Random non-control tokens after BOS, so no two prompts share a prefix (cold prompts).
Result<std::vector<ServePrompt>> random_serve_prompts(const Tokenizer& tokenizer, const RandomPromptOptions& options);

// One JSON object a line: {"prompt": "text" or [ids], "output_len": N}; blank lines are skipped.
// `output_len` given overrides the file's (which is then optional). Fewer lines than `num_prompts` are cycled.
Result<std::vector<ServePrompt>> load_jsonl_prompts(const std::string& path, const Tokenizer& tokenizer,
                                                    int32_t num_prompts, std::optional<int32_t> output_len);

// A ShareGPT JSON array of {"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}, ...]}: the
// first human turn is the prompt and the gpt turn after it gives the output length (or `output_len`). As vLLM,
// entries are shuffled with `seed`, and those under 4 tokens, with prompts over 1024 or totals over 2048
// tokens are skipped.
Result<std::vector<ServePrompt>> load_sharegpt_prompts(const std::string& path, const Tokenizer& tokenizer,
                                                       int32_t num_prompts, std::optional<int32_t> output_len,
                                                       uint64_t seed);

}  // namespace pagoda::bench
