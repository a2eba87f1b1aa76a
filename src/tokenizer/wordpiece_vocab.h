// WordPieceVocab: the pieces and special ids of a BERT-style WordPiece vocabulary, in llama.cpp's GGUF spelling
// (a word-initial piece starts with U+2581, a continuation is bare: HF's "##ing" is "ing", "the" is "▁the").
// A plain value; read from GGUF by wordpiece_vocab_from_gguf (vocab_loader.h) or from an HF tokenizer.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "tokenizer/vocab.h"

namespace pagoda {

struct WordPieceVocab {
  std::vector<std::string> pieces;
  std::vector<TokenType> types;
  TokenId cls_id = 101;  // llama.cpp's defaults for tokenizer.ggml.model = "bert"
  TokenId sep_id = 102;
  TokenId unk_id = 100;
  TokenId pad_id = 0;
  // BertNormalizer: lowercase the text, and drop accents (NFD, then no combining marks).
  bool lowercase = true;
  bool strip_accents = true;
  // A word longer than this many code points is one [UNK] (HF's max_input_chars_per_word); 0: no limit, as
  // llama.cpp (the matching is bounded by the longest piece either way).
  int32_t max_word_chars = 0;

  int32_t size() const { return int32_t(pieces.size()); }
};

}  // namespace pagoda
