// wordpiece_vocab_from_hf_json: reads a Hugging Face tokenizer.json whose model is WordPiece (BERT and its
// kin) into a WordPieceVocab in llama.cpp's spelling (as its converter writes the GGUF: a special added token kept
// as is, "##ing" -> "ing", "the" -> U+2581 "the"). Every unsupported or malformed field is an error naming the file
// and the field; it reads no files itself (tokenizer_from_hf_json does).
#pragma once

#include <string_view>

#include "pagoda/status.h"
#include "tokenizer/wordpiece_vocab.h"

namespace pagoda {

// The model (type WordPiece: vocab, unk_token, continuing_subword_prefix, max_input_chars_per_word), the
// normalizer (none or BertNormalizer: lowercase, strip_accents; clean_text and handle_chinese_chars must not be
// off), the pre-tokenizer (BertPreTokenizer), added_tokens (special ones are control tokens), the post-processor's
// [CLS] and [SEP] (TemplateProcessing or BertProcessing; absent: the tokens spelled so) and the decoder (WordPiece).
Result<WordPieceVocab> wordpiece_vocab_from_hf_json(std::string_view json_text, std::string_view name);

}  // namespace pagoda
