// add_placeholder_vocabulary: a synthetic SentencePiece vocabulary of a given size (<unk>, <s>, </s>, the 256
// byte pieces, then unique "▁word" pieces, and a final control "<|endoftext|>") written as tokenizer.ggml.* keys, for random-weight models and for
// model folders whose tokenizer pagoda cannot read yet. Text round-trips through it (byte fallback), but it is
// not the model's real tokenizer.
#pragma once

#include <cstdint>

#include "format/gguf_writer.h"

namespace pagoda::format {

void add_placeholder_vocabulary(GgufWriter& writer, int32_t vocab_size);

}  // namespace pagoda::format
