// Random-weight GGUF generation.
#include "synth/random_model_writer.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "format/gguf_names.h"
#include "format/gguf_writer.h"
#include "format/placeholder_vocabulary.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"

namespace pagoda::synth {
namespace {

using format::GgmlType;
using format::GgufValue;

// splitmix64: a tiny, fast, well-mixed generator; one stream per tensor so tensors are independent of order.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float next_unit() { return float(int64_t(next() >> 40) - (int64_t(1) << 23)) * (1.0f / float(1 << 23)); }
};

// Uniform with std 0.02 (the usual init scale): half-width 0.02 * sqrt(3).
constexpr float kHalfWidth = 0.034641016f;

}  // namespace

void fill_random_bytes(std::span<uint8_t> dst, uint64_t seed) {
  SplitMix64 rng{seed};
  for (uint8_t& b : dst) b = uint8_t(rng.next() >> 56);
}

void fill_random_weights(std::span<uint8_t> dst, GgmlType type, uint64_t seed) {
  SplitMix64 rng{seed};
  switch (type) {
    case GgmlType::kF32: {
      const size_t n = dst.size() / 4;
      float* out = reinterpret_cast<float*>(dst.data());
      for (size_t i = 0; i < n; ++i) out[i] = rng.next_unit() * kHalfWidth;
      break;
    }
    case GgmlType::kF16: {
      const size_t n = dst.size() / 2;
      uint16_t* out = reinterpret_cast<uint16_t*>(dst.data());
      for (size_t i = 0; i < n; ++i) out[i] = float_to_fp16(rng.next_unit() * kHalfWidth);
      break;
    }
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0: {
      // Random f32 values, then the same block quantizer `pagoda quantize` uses.
      const int64_t n =
          int64_t(dst.size() / (type == GgmlType::kQ8_0 ? sizeof(quant::BlockQ8_0) : sizeof(quant::BlockQ4_0))) * 32;
      std::vector<float> values(static_cast<size_t>(n));
      for (float& v : values) v = rng.next_unit() * kHalfWidth;
      if (type == GgmlType::kQ8_0)
        quant::quantize_row_q8_0(values.data(), reinterpret_cast<quant::BlockQ8_0*>(dst.data()), n);
      else
        quant::quantize_row_q4_0(values.data(), reinterpret_cast<quant::BlockQ4_0*>(dst.data()), n);
      break;
    }
    default: PAGODA_CHECK(false, "unsupported random weight type");
  }
}

bool random_model_supports(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kQ8_0 || type == GgmlType::kQ4_0;
}

Status write_random_model(const RandomModelOptions& o) {
  const ModelShape& s = o.shape;
  if (!random_model_supports(o.weight_type))
    return make_error(fmt::format("gen-model cannot write {} weights (supported: f32, f16, q8_0, q4_0)",
                                  format::ggml_type_name(o.weight_type)));
  if (s.num_layers <= 0 || s.num_heads <= 0 || s.num_kv_heads <= 0 || s.vocab_size < 3 || s.dim % s.num_heads != 0 ||
      s.num_heads % s.num_kv_heads != 0)
    return make_error(fmt::format("shape {} is inconsistent", s.name));
  // This writer knows llama's tensors only; another family's file would be a llama model under its name.
  if (!s.hf_architecture.empty())
    return make_error(fmt::format("shape {} ({}) is written through an HF folder (write_random_hf_model)", s.name,
                                  s.hf_architecture));
  const int64_t head_dim = s.dim / s.num_heads, kv_dim = head_dim * s.num_kv_heads;

  format::GgufWriter w;
  w.set(format::gguf_key::kArchitecture, GgufValue::string("llama"));
  w.set(format::gguf_key::kName, GgufValue::string(fmt::format("{} (random weights, seed {})", s.name, o.seed)));
  w.set(format::gguf_key::kAlignment, GgufValue::u32(32));
  w.set(format::gguf_key::kFileType, GgufValue::u32(format::ggml_file_type(o.weight_type)));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kContextLength),
        GgufValue::u32(uint32_t(s.context_length)));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kEmbeddingLength), GgufValue::u32(uint32_t(s.dim)));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kBlockCount), GgufValue::u32(uint32_t(s.num_layers)));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kFeedForwardLength),
        GgufValue::u32(uint32_t(s.hidden_dim)));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kRopeDimensionCount), GgufValue::u32(uint32_t(head_dim)));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kHeadCount), GgufValue::u32(uint32_t(s.num_heads)));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kHeadCountKv), GgufValue::u32(uint32_t(s.num_kv_heads)));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kRmsEpsilon), GgufValue::f32(s.rms_eps));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kRopeFreqBase), GgufValue::f32(s.rope_theta));
  w.set(format::gguf_key::arch_key("llama", format::gguf_key::kVocabSize), GgufValue::u32(uint32_t(s.vocab_size)));
  format::add_placeholder_vocabulary(w, s.vocab_size);

  struct Spec {
    std::string name;
    std::vector<int64_t> dims;
    bool is_norm;
  };
  std::vector<Spec> specs;
  specs.push_back({format::gguf_tensor::kTokenEmbedding, {s.dim, s.vocab_size}, false});
  for (int32_t l = 0; l < s.num_layers; ++l) {
    specs.push_back({format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnNorm), {s.dim}, true});
    specs.push_back({format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnQ), {s.dim, s.dim}, false});
    specs.push_back({format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnK), {s.dim, kv_dim}, false});
    specs.push_back({format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnV), {s.dim, kv_dim}, false});
    specs.push_back({format::gguf_tensor::block_tensor(l, format::gguf_tensor::kAttnOutput), {s.dim, s.dim}, false});
    specs.push_back({format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnNorm), {s.dim}, true});
    specs.push_back(
        {format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnGate), {s.dim, s.hidden_dim}, false});
    specs.push_back(
        {format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnDown), {s.hidden_dim, s.dim}, false});
    specs.push_back({format::gguf_tensor::block_tensor(l, format::gguf_tensor::kFfnUp), {s.dim, s.hidden_dim}, false});
  }
  specs.push_back({format::gguf_tensor::kOutputNorm, {s.dim}, true});
  specs.push_back({format::gguf_tensor::kOutput, {s.dim, s.vocab_size}, false});

  const int32_t num_tensors = int32_t(specs.size());
  for (int32_t i = 0; i < num_tensors; ++i) {
    const Spec& spec = specs[size_t(i)];
    // Rows that are not whole 32-element blocks fall back to f16 (the tiny shape's 172-wide ffn_down).
    const bool whole_blocks = spec.dims[0] % 32 == 0;
    const bool block_type = o.weight_type == GgmlType::kQ8_0 || o.weight_type == GgmlType::kQ4_0;
    const GgmlType type = spec.is_norm                    ? GgmlType::kF32
                          : (block_type && !whole_blocks) ? GgmlType::kF16
                                                          : o.weight_type;
    uint64_t rows = 1;
    for (size_t d = 1; d < spec.dims.size(); ++d) rows *= uint64_t(spec.dims[d]);
    const uint64_t bytes = format::ggml_row_bytes(type, uint64_t(spec.dims[0])) * rows;
    const uint64_t tensor_seed = o.seed * 0x100000001B3ull + uint64_t(i);
    w.add_tensor_generated(spec.name, type, spec.dims, bytes,
                           [&o, spec, type, tensor_seed, i, num_tensors](std::span<uint8_t> dst) {
                             if (spec.is_norm) {
                               float* out = reinterpret_cast<float*>(dst.data());
                               for (size_t k = 0; k < dst.size() / 4; ++k) out[k] = 1.0f;
                             } else {
                               fill_random_weights(dst, type, tensor_seed);
                             }
                             if (o.on_tensor) o.on_tensor(i + 1, num_tensors, spec.name);
                           });
  }
  return w.write(o.output_path);
}

}  // namespace pagoda::synth
