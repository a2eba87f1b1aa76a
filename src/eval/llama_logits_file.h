// llama-perplexity's saved next-token distributions (its `--kl-divergence-base FILE`), read back as a KL base so
// pagoda's distributions compare with llama.cpp's on the same file and text. Owns the file's layout and its
// decoding only; scoring stays in perplexity.cc.
// Layout (little-endian): "_logits_", int32 n_ctx, int32 n_vocab, int32 n_chunk, the n_chunk * n_ctx int32 token
// ids llama.cpp evaluated (its BOS first, before each chunk's first token is replaced by BOS), then per chunk the
// n_ctx - 1 - n_ctx / 2 scored rows, each 2 * ceil(n_vocab / 2) + 4 uint16: f32 scale, f32 min_log_prob, one
// uint16 q per token (log p = scale * q + min_log_prob; llama.cpp clips log-probabilities more than 16 below the
// row's largest to q = 0).
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/types.h"

namespace pagoda::eval {

class LlamaLogitsFile {
 public:
  // Reads the header and the token ids; checks the file's size against them. Errors name the file and what is
  // wrong (not this format, a size that does not add up, ids below zero).
  static Result<LlamaLogitsFile> open(const std::string& path);

  int32_t ctx() const { return ctx_; }
  int32_t vocab() const { return vocab_; }
  int32_t num_chunks() const { return num_chunks_; }
  int32_t rows_per_chunk() const { return ctx_ - 1 - ctx_ / 2; }
  // n_chunk * n_ctx ids: the text as llama.cpp tokenized it, cut into its chunks.
  std::span<const TokenId> tokens() const { return tokens_; }

  // Chunk `chunk`'s scored rows decoded to log-probabilities: rows_per_chunk() rows of vocab() values, row r for
  // chunk position n_ctx / 2 + r.
  Status read_chunk(int32_t chunk, std::vector<double>& log_probs);

 private:
  std::string path_;
  std::unique_ptr<std::ifstream> in_;
  int32_t ctx_ = 0, vocab_ = 0, num_chunks_ = 0;
  std::vector<TokenId> tokens_;
  std::vector<uint16_t> row_buffer_;
};

}  // namespace pagoda::eval
