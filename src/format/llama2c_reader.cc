// llama2.c checkpoint and tokenizer.bin parsing, with every size checked against the file before use.
#include "format/llama2c_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "format/gguf_names.h"

namespace pagoda::format {
namespace {

// Validates the header as the checkpoint's shapes need it; a garbage header fails here, not later.
Status check_config(const Llama2cConfig& c, const std::string& path) {
  auto bad = [&](const char* field, int32_t v) {
    return make_error(fmt::format("{}: not a llama2.c checkpoint (header {} = {})", path, field, v));
  };
  if (c.dim <= 0 || c.dim > 65536) return bad("dim", c.dim);
  if (c.hidden_dim <= 0 || c.hidden_dim > 1 << 20) return bad("hidden_dim", c.hidden_dim);
  if (c.num_layers <= 0 || c.num_layers > 1024) return bad("n_layers", c.num_layers);
  if (c.num_heads <= 0 || c.dim % c.num_heads != 0) return bad("n_heads", c.num_heads);
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0) return bad("n_kv_heads", c.num_kv_heads);
  if (c.vocab_size <= 0 || c.vocab_size > 1 << 24) return bad("vocab_size", c.vocab_size);
  if (c.seq_len <= 0 || c.seq_len > 1 << 24) return bad("seq_len", c.seq_len);
  if ((c.dim / c.num_heads) % 2 != 0) return bad("head size (dim / n_heads)", c.dim / c.num_heads);
  return Status();
}

}  // namespace

Result<Llama2cCheckpoint> read_llama2c_checkpoint(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(auto mapping, MappedFile::open(path));
  const auto bytes = mapping->bytes();
  if (bytes.size() < 7 * sizeof(int32_t))
    return make_error(fmt::format("{}: too small for a llama2.c checkpoint ({} bytes)", path, bytes.size()));
  int32_t header[7];
  std::memcpy(header, bytes.data(), sizeof(header));
  Llama2cConfig c;
  c.dim = header[0];
  c.hidden_dim = header[1];
  c.num_layers = header[2];
  c.num_heads = header[3];
  c.num_kv_heads = header[4];
  c.shared_classifier = header[5] > 0;
  c.vocab_size = header[5] > 0 ? header[5] : (header[5] == INT32_MIN ? 0 : -header[5]);
  c.seq_len = header[6];
  PAGODA_RETURN_IF_ERROR(check_config(c, path));

  const int64_t dim = c.dim, hidden = c.hidden_dim, layers = c.num_layers, vocab = c.vocab_size;
  const int64_t head_size = dim / c.num_heads;
  const int64_t kv_dim = dim * c.num_kv_heads / c.num_heads;
  // Element counts of the arrays in file order (llama2.c's memory_map_weights).
  const int64_t n_embd = vocab * dim, n_rms_att = layers * dim, n_wq = layers * dim * dim, n_wk = layers * kv_dim * dim,
                n_wv = n_wk, n_wo = n_wq, n_rms_ffn = n_rms_att, n_w1 = layers * hidden * dim,
                n_w2 = layers * dim * hidden, n_w3 = n_w1, n_rms_final = dim,
                n_freq = int64_t(c.seq_len) * head_size;  // freq_cis_real + freq_cis_imag, seq_len*head/2 each
  int64_t needed = n_embd + n_rms_att + n_wq + n_wk + n_wv + n_wo + n_rms_ffn + n_w1 + n_w2 + n_w3 + n_rms_final;
  if (!c.shared_classifier) needed += n_freq + n_embd;
  const uint64_t needed_bytes = uint64_t(needed) * 4 + sizeof(header);
  if (bytes.size() < needed_bytes)
    return make_error(
        fmt::format("{}: file is {} bytes, the header says the weights need {}", path, bytes.size(), needed_bytes));

  const float* base = reinterpret_cast<const float*>(bytes.data() + sizeof(header));
  const float* embd = base;
  const float* rms_att = embd + n_embd;
  const float* wq = rms_att + n_rms_att;
  const float* wk = wq + n_wq;
  const float* wv = wk + n_wk;
  const float* wo = wv + n_wv;
  const float* rms_ffn = wo + n_wo;
  const float* w1 = rms_ffn + n_rms_ffn;
  const float* w2 = w1 + n_w1;
  const float* w3 = w2 + n_w2;
  const float* rms_final = w3 + n_w3;
  const float* wcls = rms_final + n_rms_final + n_freq;

  Llama2cCheckpoint ckpt;
  ckpt.config = c;
  auto add = [&](std::string name, std::vector<int64_t> dims, const float* data) {
    uint64_t n = 1;
    for (int64_t d : dims) n *= uint64_t(d);
    ckpt.tensors.push_back({std::move(name), std::move(dims), data, n});
  };
  add(gguf_tensor::kTokenEmbedding, {dim, vocab}, embd);
  for (int64_t l = 0; l < layers; ++l) {
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kAttnNorm), {dim}, rms_att + l * dim);
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kAttnQ), {dim, dim}, wq + l * dim * dim);
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kAttnK), {dim, kv_dim}, wk + l * kv_dim * dim);
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kAttnV), {dim, kv_dim}, wv + l * kv_dim * dim);
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kAttnOutput), {dim, dim}, wo + l * dim * dim);
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kFfnNorm), {dim}, rms_ffn + l * dim);
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kFfnGate), {dim, hidden}, w1 + l * hidden * dim);
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kFfnDown), {hidden, dim}, w2 + l * dim * hidden);
    add(gguf_tensor::block_tensor(int32_t(l), gguf_tensor::kFfnUp), {dim, hidden}, w3 + l * hidden * dim);
  }
  add(gguf_tensor::kOutputNorm, {dim}, rms_final);
  if (!c.shared_classifier) add(gguf_tensor::kOutput, {dim, vocab}, wcls);
  ckpt.mapping = std::move(mapping);
  return ckpt;
}

Result<Llama2cVocab> read_llama2c_vocab(const std::string& path, int32_t vocab_size) {
  PAGODA_ASSIGN_OR_RETURN(auto mapping, MappedFile::open(path));
  const auto bytes = mapping->bytes();
  size_t pos = 0;
  auto read_i32 = [&](int32_t& out) {
    if (bytes.size() - pos < 4) return false;
    std::memcpy(&out, bytes.data() + pos, 4);
    pos += 4;
    return true;
  };
  Llama2cVocab vocab;
  if (!read_i32(vocab.max_token_length) || vocab.max_token_length <= 0)
    return make_error(fmt::format("{}: not a llama2.c tokenizer (bad max_token_length)", path));
  // Each token takes at least 8 bytes of the file: reserve no more than the file can hold (the count comes from
  // the checkpoint's header, up to 2^24).
  const size_t num_reserved = std::min(size_t(std::max(vocab_size, 0)), bytes.size() / 8);
  vocab.pieces.reserve(num_reserved);
  vocab.scores.reserve(num_reserved);
  for (int32_t i = 0; i < vocab_size; ++i) {
    int32_t score_bits = 0, len = 0;
    if (!read_i32(score_bits) || !read_i32(len))
      return make_error(fmt::format("{}: truncated at token {} of {}", path, i, vocab_size));
    if (len < 0 || size_t(len) > bytes.size() - pos || len > vocab.max_token_length)
      return make_error(fmt::format("{}: token {} has a bad length {}", path, i, len));
    float score;
    std::memcpy(&score, &score_bits, 4);
    vocab.scores.push_back(score);
    vocab.pieces.emplace_back(reinterpret_cast<const char*>(bytes.data() + pos), size_t(len));
    pos += size_t(len);
  }
  return vocab;
}

}  // namespace pagoda::format
