// vocab_from_gguf / bpe_vocab_from_gguf / tokenizer_from_gguf: reads tokenizer.ggml.* metadata (model, tokens, scores, token_type,
// bos/eos/unknown ids, add_bos_token, add_space_prefix) into a Vocab and builds the matching Tokenizer.
#pragma once

#include <pagoda/status.h>

#include <memory>

#include "format/gguf_reader.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"
#include "tokenizer/wordpiece_vocab.h"

namespace pagoda {

// Errors name the key: "tokenizer.ggml.scores has 500 entries, expected 512 (one per token)".
Result<Vocab> vocab_from_gguf(const format::GgufFile& file);
// The BPE side (tokenizer.ggml.model = "gpt2", byte-level; or "gemma4", UTF-8 with <0xNN> bytes): tokens, merges ("left right"), token_type (control
// and user-defined tokens become added tokens), tokenizer.ggml.pre (llama.cpp's names, llama_pre_tokenizers.h;
// absent: llama.cpp's 'default', with its warning on stderr).
Result<BpeVocab> bpe_vocab_from_gguf(const format::GgufFile& file);
// tokenizer.ggml.model = "bert" (WordPiece): tokens in llama.cpp's spelling (word-initial pieces after U+2581),
// token_type, the [CLS] (bos_token_id, else cls_token_id), [SEP], [UNK] and [PAD] ids with llama.cpp's defaults
// (101, 102, 100, 0), and the normalizer's lowercase and strip_accents flags (absent: lowercase, and strip_accents
// as lowercase).
Result<WordPieceVocab> wordpiece_vocab_from_gguf(const format::GgufFile& file);
// tokenizer.ggml.model = "llama" (SentencePiece), "gpt2" (byte-level BPE), "gemma4" (UTF-8 BPE) or "bert"
// (WordPiece); others are an
// error naming the key and the value.
Result<std::unique_ptr<Tokenizer>> tokenizer_from_gguf(const format::GgufFile& file);

}  // namespace pagoda
