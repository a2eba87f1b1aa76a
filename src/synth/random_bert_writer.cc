// Random-weight encoder GGUFs (bert, jina-bert-v2, nomic-bert).
#include "synth/random_bert_writer.h"

#include <fmt/format.h>

#include <algorithm>

#include <string>
#include <vector>

#include "core/check.h"
#include "format/gguf_names.h"
#include "format/gguf_writer.h"
#include "model/bert_weights.h"
#include "model/hf_gguf.h"
#include "model/model_config.h"
#include "synth/random_tensor_specs.h"

namespace pagoda::synth {
namespace {

using format::GgmlType;
using format::GgufValue;

// llama.cpp's token types.
constexpr int32_t kBertNormal = 1, kBertUnknown = 2, kBertControl = 3, kBertUnused = 5;
// "▁": the word-start mark llama.cpp's converter puts on WordPiece pieces that begin a word ("##" ones lose theirs).
constexpr const char* kBertWordStart = "\xE2\x96\x81";

// [PAD] [UNK] [CLS] [SEP] [MASK], then every letter, digit and punctuation mark as a word start and as a
// continuation, common words (none spelled twice: llama.cpp refuses a vocabulary that does), and unused slots up to
// vocab_size. Returns the token types.
std::vector<int32_t> add_wordpiece_vocabulary(format::GgufWriter& w, int32_t vocab_size) {
  std::vector<std::string> pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::vector<int32_t> types = {kBertControl, kBertUnknown, kBertControl, kBertControl, kBertControl};
  const std::string chars = "abcdefghijklmnopqrstuvwxyz0123456789.,?!'-:;()";
  for (char c : chars) {
    pieces.push_back(std::string(kBertWordStart) + c);
    types.push_back(kBertNormal);
  }
  for (char c : std::string("abcdefghijklmnopqrstuvwxyz0123456789")) {
    pieces.push_back(std::string(1, c));
    types.push_back(kBertNormal);
  }
  for (const char* word :
       {"the", "an", "of", "to", "in", "is", "and", "what", "which", "who", "where", "it", "on", "for", "with",
        "panda", "pandas", "bear", "bears", "eat", "eats", "bamboo", "china", "paris", "france", "capital", "city",
        "machine", "learning", "model", "models", "hello", "world", "cat", "dog", "sat", "mat", "red", "blue",
        "weather", "today", "sun", "rain", "ing", "ed", "er", "ly", "tion"}) {
    pieces.push_back(std::string(kBertWordStart) + word);
    types.push_back(kBertNormal);
  }
  for (int32_t i = 0; int32_t(pieces.size()) < vocab_size; ++i) {
    pieces.push_back(fmt::format("[unused{}]", i));
    types.push_back(kBertUnused);
  }
  pieces.resize(size_t(vocab_size));
  types.resize(size_t(vocab_size));
  namespace k = format::gguf_key;
  w.set(k::kTokenizerModel, GgufValue::string("bert"));
  w.set(k::kTokens, GgufValue::string_array(pieces));
  w.set(k::kTokenType, GgufValue::i32_array(types));
  w.set(k::kPaddingId, GgufValue::u32(0));
  w.set(k::kUnknownId, GgufValue::u32(1));
  w.set(k::kClsId, GgufValue::u32(2));
  w.set(k::kBosId, GgufValue::u32(2));
  w.set(k::kSeparatorId, GgufValue::u32(3));
  w.set(k::kMaskId, GgufValue::u32(4));
  return types;
}

// The word-overlap reranker's values (ModelShape::word_overlap_head): Sylvester's Hadamard rows of the width (row 0,
// all ones, excluded) are orthogonal and of mean 0, so LayerNorm passes them through. Each non-control token embeds
// as row 1 + id % (dim - 3); control tokens ([CLS], [SEP], ...) and the position and type tables as 0. One layer: Q
// and K 0, so every row attends uniformly; V and the output projection the identity, so [CLS] (0 itself) becomes
// the mean of the words' rows, which its LayerNorm turns into each word's count over the root of the sum of squared
// counts. FFN unit k fires when word row 1 + k's share passes kOverlapThreshold (a word of the query seen again in
// the document: 2 / sqrt(sum c^2)), writing along the spare row dim - 1; the head reads that row through tanh.
constexpr float kOverlapThreshold = 0.45f, kOverlapGain = 30.0f, kDownGain = 0.1f, kHeadGain = 3.0f;

float hadamard(int64_t row, int64_t col) { return __builtin_popcountll(uint64_t(row & col)) % 2 == 0 ? 1.0f : -1.0f; }

// Fills `v` (f32, GGUF dims `dims`) for tensor `name`; false for a tensor this construction does not know.
bool fill_overlap_reranker(const std::string& name, const std::vector<int64_t>& dims, int64_t dim,
                           const std::vector<int32_t>& token_types, float* v) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::fill(v, v + n, 0.0f);
  const int64_t vocab_size = int64_t(token_types.size());
  const int64_t spare = dim - 1, words = dim - 3;
  auto ends_with = [&](const char* suffix) { return name.ends_with(suffix); };
  namespace t = format::gguf_tensor;
  if (name == t::kTokenEmbedding) {
    for (int64_t id = 0; id < vocab_size; ++id)
      if (token_types[size_t(id)] == kBertNormal)
        for (int64_t i = 0; i < dim; ++i) v[id * dim + i] = hadamard(1 + id % words, i);
  } else if (ends_with("norm.weight")) {  // every LayerNorm: weight 1, bias 0
    std::fill(v, v + n, 1.0f);
  } else if (ends_with("attn_v.weight") || ends_with("attn_output.weight")) {
    for (int64_t i = 0; i < dim; ++i) v[i * dim + i] = 1.0f;
  } else if (ends_with("ffn_up.weight")) {  // [dim, hidden]: unit k reads word row 1 + k's share
    for (int64_t k = 0; k < std::min(words, dims[1]); ++k)
      for (int64_t i = 0; i < dim; ++i) v[k * dim + i] = kOverlapGain * hadamard(1 + k, i) / float(dim);
  } else if (ends_with("ffn_up.bias")) {
    for (int64_t k = 0; k < std::min(words, n); ++k) v[k] = -kOverlapGain * kOverlapThreshold;
  } else if (ends_with("ffn_down.weight")) {  // [hidden, dim]: every unit writes along the spare row
    const int64_t hidden = dims[0];
    for (int64_t o = 0; o < dims[1]; ++o)
      for (int64_t k = 0; k < std::min(words, hidden); ++k) v[o * hidden + k] = kDownGain * hadamard(spare, o);
  } else if (name == "cls.weight") {
    for (int64_t i = 0; i < dim; ++i) v[i] = kHeadGain * hadamard(spare, i) / float(dim);
  } else if (name == "cls.output.weight") {
    v[0] = 1.0f;
  } else if (!ends_with(".bias") && !ends_with("attn_q.weight") && !ends_with("attn_k.weight") &&
             name != t::kTokenTypes && name != t::kPositionEmbedding) {
    return false;
  }
  return true;
}

}  // namespace

Status write_random_bert_model(const RandomModelOptions& o) {
  const ModelShape& s = o.shape;
  if (!s.is_encoder()) return make_error(fmt::format("shape {} is not an encoder shape", s.name));
  const bool bert = s.gguf_architecture == "bert", jina = s.gguf_architecture == "jina-bert-v2",
             nomic = s.gguf_architecture == "nomic-bert";
  if (!random_model_supports(o.weight_type))
    return make_error(fmt::format("gen-model cannot write {} weights (supported: f32, f16, q8_0, q4_0)",
                                  format::ggml_type_name(o.weight_type)));
  uint32_t pooling = 0;
  if (s.embedding_pooling == "mean") pooling = 1;
  else if (s.embedding_pooling == "cls") pooling = 2;
  else if (s.embedding_pooling == "rank") pooling = 4;
  else return make_error(fmt::format("shape {}: pooling '{}' is not mean, cls or rank", s.name, s.embedding_pooling));
  if (s.num_layers <= 0 || s.num_heads <= 0 || s.num_kv_heads != s.num_heads || s.dim % s.num_heads != 0 ||
      s.vocab_size < 200)
    return make_error(fmt::format("shape {} is inconsistent", s.name));
  ModelConfig c;
  c.architecture = s.gguf_architecture;
  c.rope_theta = s.rope_theta;
  c.dim = s.dim;
  c.hidden_dim = s.hidden_dim;
  c.num_layers = s.num_layers;
  c.num_heads = c.num_kv_heads = s.num_heads;
  c.head_dim = c.rope_dim = s.dim / s.num_heads;
  c.vocab_size = s.vocab_size;
  c.context_length = s.context_length;
  c.rms_eps = s.rms_eps;
  c.encoder = true;
  c.num_token_types = 2;
  format::GgufWriter w =
      model_gguf_metadata(
          c, s.word_overlap_head ? fmt::format("{} (constructed weights)", s.name)
                                 : fmt::format("{} (random weights, seed {})", s.name, o.seed),
          o.weight_type);
  w.set(format::gguf_key::arch_key(c.architecture, format::gguf_key::kPoolingType), GgufValue::u32(pooling));
  const std::vector<int32_t> token_types = add_wordpiece_vocabulary(w, s.vocab_size);
  if (s.word_overlap_head &&
      (!bert || pooling != 4 || o.weight_type != GgmlType::kF32 || s.dim < 8 || (s.dim & (s.dim - 1)) != 0))
    return make_error(
        fmt::format("shape {}: the word-overlap reranker is bert, rank pooling, f32, a power-of-two width", s.name));

  using format::gguf_tensor::block_tensor;
  namespace t = format::gguf_tensor;
  const int64_t dim = c.dim, hidden = c.hidden_dim;
  std::vector<RandomTensorSpec> specs;
  specs.push_back({t::kTokenEmbedding, {dim, c.vocab_size}, RandomValues::kMatrix});
  specs.push_back({t::kTokenTypes, {dim, c.num_token_types}, RandomValues::kSmall});
  if (bert) specs.push_back({t::kPositionEmbedding, {dim, c.context_length}, RandomValues::kSmall});
  specs.push_back({fmt::format("{}.weight", t::kTokenEmbeddingNormStem), {dim}, RandomValues::kNorm});
  specs.push_back({fmt::format("{}.bias", t::kTokenEmbeddingNormStem), {dim}, RandomValues::kSmall});
  auto layer_norm = [&](int32_t l, const char* stem) {
    specs.push_back({block_tensor(l, stem), {dim}, RandomValues::kNorm});
    specs.push_back({block_tensor(l, stem, "bias"), {dim}, RandomValues::kSmall});
  };
  for (int32_t l = 0; l < c.num_layers; ++l) {
    if (nomic) {
      specs.push_back({block_tensor(l, t::kAttnQkv), {dim, 3 * dim}, RandomValues::kMatrix});
    } else {
      for (const char* proj : {t::kAttnQ, t::kAttnK, t::kAttnV}) {
        specs.push_back({block_tensor(l, proj), {dim, dim}, RandomValues::kMatrix});
        specs.push_back({block_tensor(l, proj, "bias"), {dim}, RandomValues::kSmall});
      }
    }
    if (jina && s.encoder_qk_norms) {
      layer_norm(l, t::kAttnQNorm);
      layer_norm(l, t::kAttnKNorm);
    }
    specs.push_back({block_tensor(l, t::kAttnOutput), {dim, dim}, RandomValues::kMatrix});
    if (!nomic) specs.push_back({block_tensor(l, t::kAttnOutput, "bias"), {dim}, RandomValues::kSmall});
    layer_norm(l, t::kAttnOutputNorm);
    if (jina && s.encoder_qk_norms) layer_norm(l, kBertAttnNorm2Stem);
    if (nomic) {
      specs.push_back({block_tensor(l, t::kFfnGate), {dim, hidden}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnUp), {dim, hidden}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnDown), {hidden, dim}, RandomValues::kMatrix});
    } else {
      // jina-bert-v2's ffn_up holds the gate's rows first, then the up rows (its converter's gated_layers).
      const int64_t up_rows = jina ? 2 * hidden : hidden;
      specs.push_back({block_tensor(l, t::kFfnUp), {dim, up_rows}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnUp, "bias"), {up_rows}, RandomValues::kSmall});
      specs.push_back({block_tensor(l, t::kFfnDown), {hidden, dim}, RandomValues::kMatrix});
      specs.push_back({block_tensor(l, t::kFfnDown, "bias"), {dim}, RandomValues::kSmall});
    }
    layer_norm(l, t::kLayerOutputNorm);
  }
  if (pooling == 4 && jina) {
    // jina-reranker-v1's head: one row, its output the score (llama.cpp: tanh of it).
    specs.push_back({fmt::format("{}.weight", t::kClassifierStem), {dim, 1}, RandomValues::kMatrix});
    specs.push_back({fmt::format("{}.bias", t::kClassifierStem), {1}, RandomValues::kSmall});
  } else if (pooling == 4) {
    specs.push_back({fmt::format("{}.weight", t::kClassifierStem), {dim, dim}, RandomValues::kMatrix});
    specs.push_back({fmt::format("{}.bias", t::kClassifierStem), {dim}, RandomValues::kSmall});
    specs.push_back({fmt::format("{}.weight", t::kClassifierOutputStem), {dim, 1}, RandomValues::kMatrix});
    specs.push_back({fmt::format("{}.bias", t::kClassifierOutputStem), {1}, RandomValues::kSmall});
  }

  if (!s.word_overlap_head) return write_random_tensors(w, specs, o);
  return write_random_tensors(w, specs, o, [&s, &token_types](const RandomTensorSpec& spec, std::span<uint8_t> dst) {
    const bool known =
        fill_overlap_reranker(spec.name, spec.dims, s.dim, token_types, reinterpret_cast<float*>(dst.data()));
    PAGODA_CHECK(known, "the word-overlap reranker has no values for {}", spec.name);
    return true;
  });
}

}  // namespace pagoda::synth
