// vocab_from_gguf / tokenizer_from_gguf: reads tokenizer.ggml.* metadata (model, tokens, scores, token_type,
// bos/eos/unknown ids, add_bos_token, add_space_prefix) into a Vocab and builds the matching Tokenizer.
#pragma once

#include <pagoda/status.h>

#include <memory>

#include "format/gguf_reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace pagoda {

// Errors name the key: "tokenizer.ggml.scores has 500 entries, expected 512 (one per token)".
Result<Vocab> vocab_from_gguf(const format::GgufFile& file);
// Only tokenizer.ggml.model = "llama" (SentencePiece) so far; others are a clear error naming the model.
Result<std::unique_ptr<Tokenizer>> tokenizer_from_gguf(const format::GgufFile& file);

}  // namespace pagoda
