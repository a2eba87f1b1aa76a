// Readers for Karpathy's llama2.c files: the version-0 checkpoint (7-int header + f32 arrays) and the
// tokenizer.bin vocabulary. Owns nothing but the mapping; tensors are views into it, named and shaped as
// llama.cpp's GGUF names them so the converter can pass them straight to GgufWriter.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/mapped_file.h"

namespace pagoda::format {

struct Llama2cConfig {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t vocab_size = 0;  // absolute value of the header field
  int32_t seq_len = 0;
  bool shared_classifier = true;  // header vocab_size > 0: the output matrix is the embedding
};

struct Llama2cTensor {
  std::string name;           // GGUF name, e.g. "blk.0.attn_q.weight"
  std::vector<int64_t> dims;  // ggml order: dims[0] innermost
  const float* data = nullptr;
  uint64_t num_elements = 0;
};

struct Llama2cCheckpoint {
  Llama2cConfig config;
  std::vector<Llama2cTensor> tensors;  // in llama.cpp's order: token_embd, per layer, output_norm, [output]
  std::unique_ptr<MappedFile> mapping;
};

struct Llama2cVocab {
  int32_t max_token_length = 0;
  std::vector<std::string> pieces;  // as stored: a space is ' ', not U+2581
  std::vector<float> scores;
};

// Errors: "CHECKPOINT: file is 1000 bytes, the header says the weights need 1056512".
Result<Llama2cCheckpoint> read_llama2c_checkpoint(const std::string& path);
Result<Llama2cVocab> read_llama2c_vocab(const std::string& path, int32_t vocab_size);

}  // namespace pagoda::format
