// Test helper: reads llama2.c's tok512.bin (the bundled stories260K vocabulary) straight into a Vocab, so the
// tokenizer tests do not depend on the GGUF converter or reader.
#pragma once

#include <pagoda/status.h>

#include <string>

#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/vocab.h"

namespace pagoda::testing {

// Pieces get SentencePiece's U+2581 for each space; types follow the fixed llama2.c layout: 0 unknown,
// 1 and 2 control (BOS, EOS), 3..258 bytes <0x00>..<0xFF>, the rest normal.
Result<Vocab> read_tok512_vocab(const std::string& path);

// PAGODA_TEST_ASSETS_DIR/models/stories260K/tok512.bin
std::string tok512_path();

// The bundled vocabulary's tokenizer, built once per test binary from tok512.bin (aborts if it cannot be read).
const SpmTokenizer& stories_tokenizer();

}  // namespace pagoda::testing
