// ModelConfig: the hyper-parameters of a decoder-only transformer, read from GGUF `<arch>.*` metadata.
// A plain value; every field is validated (positive, divisible) by model_config_from_gguf.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "kv/kv_cache_view.h"

namespace pagoda {

struct ModelConfig {
  std::string architecture;  // general.architecture, e.g. "llama"
  std::string name;          // general.name, may be empty
  int32_t dim = 0;           // embedding_length
  int32_t hidden_dim = 0;    // feed_forward_length
  int32_t num_layers = 0;    // block_count
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;  // attention.key_length (Qwen3: 128 with dim 1024, 16 heads), default dim / num_heads
  int32_t rope_dim = 0;  // rope.dimension_count (rotated dims per head), default head_dim
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  // RoPE pairs: false = adjacent dims (2i, 2i+1) as in llama.cpp's llama GGUFs, whose Q/K rows the converter
  // permuted; true = halves (i, i + rope_dim/2), "NeoX" style, as Qwen2/Qwen3 (and un-permuted HF weights) use.
  bool rope_neox = false;
  // f32 [rope_dim / 2]: pair i's frequency is divided by factor i (Llama 3 "llama3" rope scaling; GGUF tensor
  // rope_freqs.weight). Empty: no scaling.
  std::vector<float> rope_freq_factors;

  int32_t kv_dim() const { return num_kv_heads * head_dim; }
  KvShape kv_shape() const { return {num_layers, kv_dim(), num_kv_heads}; }
  int32_t q_dim() const { return num_heads * head_dim; }
};

// Bounds on the hyper-parameters, checked before anything proportional to them is allocated. Generous: the
// largest public models sit far inside them (hidden size 16384, FFN 53248, 126 blocks, 128 heads, head size 256,
// vocabularies of 262144, contexts of 10M); they stop corrupted or hostile files, not big models.
struct ModelConfigLimits {
  static constexpr int32_t kMaxEmbeddingLength = 1 << 20;
  static constexpr int32_t kMaxFeedForwardLength = 1 << 22;
  static constexpr int32_t kMaxBlockCount = 1 << 16;
  static constexpr int32_t kMaxHeadCount = 1 << 14;
  static constexpr int32_t kMaxHeadDim = 4096;
  static constexpr int32_t kMaxVocabSize = 1 << 23;
  static constexpr int32_t kMaxContextLength = 1 << 24;
};

// Errors name the key: "model.gguf: llama.attention.head_count = 0 must be positive".
Result<ModelConfig> model_config_from_gguf(const format::GgufFile& file);

}  // namespace pagoda
