// Vocab: the token pieces, scores and types of a SentencePiece-style vocabulary, plus its special ids.
// A plain value; read from GGUF tokenizer.ggml.* keys by vocab_from_gguf (vocab_loader.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace pagoda {

// tokenizer.ggml.token_type values, as llama.cpp writes them.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct Vocab {
  std::vector<std::string> pieces;  // UTF-8; SentencePiece marks a space as U+2581 ("▁")
  std::vector<float> scores;        // merge priority: higher merges first
  std::vector<TokenType> types;
  TokenId bos_id = 1;
  TokenId eos_id = 2;
  TokenId unk_id = 0;
  bool add_bos = true;
  bool add_dummy_prefix = true;  // prepend a space to the text before encoding

  int32_t size() const { return int32_t(pieces.size()); }
};

}  // namespace pagoda
