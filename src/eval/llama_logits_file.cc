// Reading llama-perplexity's saved log-probabilities.
#include "eval/llama_logits_file.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

namespace pagoda::eval {
namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr int64_t kHeaderBytes = 8 + 3 * 4;

int64_t row_values(int32_t vocab) { return 2 * ((int64_t(vocab) + 1) / 2) + 4; }

}  // namespace

Result<LlamaLogitsFile> LlamaLogitsFile::open(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(fmt::format("cannot read the logits file {}: {}", path, ec.message()));
  LlamaLogitsFile f;
  f.path_ = path;
  f.in_ = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*f.in_) return make_error(fmt::format("cannot open the logits file {}", path));
  char magic[8];
  int32_t header[3];
  if (int64_t(size) < kHeaderBytes || !f.in_->read(magic, 8) ||
      !f.in_->read(reinterpret_cast<char*>(header), sizeof(header)) || std::memcmp(magic, kMagic, 8) != 0)
    return make_error(fmt::format("{} is not a logits file of llama-perplexity's --kl-divergence-base", path));
  f.ctx_ = header[0];
  f.vocab_ = header[1];
  f.num_chunks_ = header[2];
  if (f.ctx_ < 4 || f.vocab_ < 1 || f.num_chunks_ < 1)
    return make_error(fmt::format("the logits file {} has n_ctx {}, n_vocab {}, n_chunk {}: not a perplexity run's",
                                  path, f.ctx_, f.vocab_, f.num_chunks_));
  const int64_t num_tokens = int64_t(f.num_chunks_) * f.ctx_;
  const int64_t expected = kHeaderBytes + num_tokens * 4 +
                           int64_t(f.num_chunks_) * f.rows_per_chunk() * row_values(f.vocab_) * 2;
  if (int64_t(size) != expected)
    return make_error(fmt::format("the logits file {} is {} bytes where its header (n_ctx {}, n_vocab {}, n_chunk {}) "
                                  "says {}: truncated or not this format",
                                  path, size, f.ctx_, f.vocab_, f.num_chunks_, expected));
  f.tokens_.resize(size_t(num_tokens));
  if (!f.in_->read(reinterpret_cast<char*>(f.tokens_.data()), std::streamsize(num_tokens * 4)))
    return make_error(fmt::format("cannot read the token ids of the logits file {}", path));
  for (TokenId t : f.tokens_)
    if (t < 0) return make_error(fmt::format("the logits file {} holds a negative token id ({})", path, t));
  return f;
}

Status LlamaLogitsFile::read_chunk(int32_t chunk, std::vector<double>& log_probs) {
  if (chunk < 0 || chunk >= num_chunks_)
    return make_error(fmt::format("chunk {} is outside the logits file's {} chunks", chunk, num_chunks_));
  const int64_t values = row_values(vocab_);
  const int64_t offset = kHeaderBytes + int64_t(tokens_.size()) * 4 + int64_t(chunk) * rows_per_chunk() * values * 2;
  row_buffer_.resize(size_t(rows_per_chunk() * values));
  in_->clear();
  in_->seekg(offset);
  if (!in_->read(reinterpret_cast<char*>(row_buffer_.data()), std::streamsize(row_buffer_.size() * 2)))
    return make_error(fmt::format("cannot read chunk {} of the logits file {}", chunk, path_));
  log_probs.resize(size_t(rows_per_chunk()) * size_t(vocab_));
  for (int32_t r = 0; r < rows_per_chunk(); ++r) {
    const uint16_t* row = row_buffer_.data() + r * values;
    float scale, min_log_prob;
    std::memcpy(&scale, row, 4);
    std::memcpy(&min_log_prob, row + 2, 4);
    double* out = log_probs.data() + size_t(r) * size_t(vocab_);
    // As llama.cpp decodes them: float arithmetic, so both sides' base figures are the same numbers.
    for (int32_t i = 0; i < vocab_; ++i) out[i] = double(scale * float(row[4 + i]) + min_log_prob);
  }
  return Status();
}

}  // namespace pagoda::eval
