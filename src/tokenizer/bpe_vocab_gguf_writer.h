// add_bpe_vocabulary: writes a BpeVocab as GGUF's byte-level BPE keys in llama.cpp's layout (tokenizer.ggml.model
// "gpt2", pre, tokens, token_type, merges, BOS/EOS/EOT/EOM ids, add_bos_token), so that bpe_vocab_from_gguf reads
// back the same tokenizer and llama.cpp loads the file. Writes keys only; the reader lives in vocab_loader.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string_view>

#include "format/gguf_writer.h"
#include "tokenizer/bpe_vocab.h"

namespace pagoda {

// `vocab_size`: the model's embedding rows; ids the tokenizer lacks are written as "[PAD<id>]" of type unused,
// as llama.cpp's converter does. Errors (prefixed by `source`) when the vocabulary is larger than the model's, or
// its pre-tokenizer has no tokenizer.ggml.pre name (only the GPT-2, Llama 3 and Qwen2 splits have one).
Status add_bpe_vocabulary(const BpeVocab& vocab, int32_t vocab_size, format::GgufWriter& writer,
                          std::string_view source);

}  // namespace pagoda
