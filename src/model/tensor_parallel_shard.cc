// The tensor-parallel split of heads, FFN units and vocabulary, and the weight views and copies that hold it.
#include "model/tensor_parallel_shard.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>

namespace pagoda {

namespace {

// [begin, begin + len) of `total` for rank r of `size`: the first total % size ranks get one more.
void even_range(int64_t total, int32_t rank, int32_t size, int32_t& begin, int32_t& len) {
  const int64_t base = total / size, extra = total % size;
  begin = int32_t(rank * base + std::min<int64_t>(rank, extra));
  len = int32_t(base + (rank < extra ? 1 : 0));
}

WeightView row_slice(const WeightView& w, int64_t row_begin, int64_t num_rows) {
  if (w.data == nullptr) return w;  // a pipeline stage without this matrix
  WeightView out = w;
  out.data = static_cast<const uint8_t*>(w.data) + row_begin * w.row_bytes();
  out.num_rows = num_rows;
  return out;
}

// Columns [col_begin, col_begin + num_cols) of every row, copied into memory `owned` keeps.
Result<WeightView> column_slice(const WeightView& w, int64_t col_begin, int64_t num_cols, const char* name,
                                std::vector<std::shared_ptr<const void>>& owned) {
  const int64_t block = dtype_block_size(w.dtype);
  if (dtype_is_row_interleaved(w.dtype))
    return make_error(fmt::format("tensor parallel: {} is already repacked ({})", name, dtype_name(w.dtype)));
  if (col_begin % block != 0 || num_cols % block != 0)
    return make_error(fmt::format("tensor parallel: {} ({}) cannot be cut at column {} (+{}): blocks of {} values",
                                  name, dtype_name(w.dtype), col_begin, num_cols, block));
  WeightView out = w;
  out.num_cols = num_cols;
  const int64_t src_row_bytes = w.row_bytes(), dst_row_bytes = out.row_bytes();
  auto bytes = std::shared_ptr<uint8_t[]>(new uint8_t[size_t(dst_row_bytes * w.num_rows)]);
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t r = 0; r < w.num_rows; ++r) {
    const uint8_t* row = src + r * src_row_bytes;
    uint8_t* dst = bytes.get() + r * dst_row_bytes;
    if (w.dtype == DType::kInt8) {  // the row's f32 scale, then its values
      std::memcpy(dst, row, sizeof(float));
      std::memcpy(dst + sizeof(float), row + sizeof(float) + col_begin, size_t(num_cols));
    } else {
      const int64_t prefix = dtype_row_bytes(w.dtype, col_begin);
      std::memcpy(dst, row + prefix, size_t(dst_row_bytes));
    }
  }
  out.data = bytes.get();
  if (w.input_scale != nullptr) out.input_scale = w.input_scale + col_begin;  // AWQ: per input column
  owned.push_back(std::shared_ptr<const void>(bytes, bytes.get()));
  return out;
}

std::vector<float> slice(const std::vector<float>& v, int64_t begin, int64_t len) {
  if (v.empty()) return {};
  return std::vector<float>(v.begin() + begin, v.begin() + begin + len);
}

}  // namespace

Result<TensorParallelShard> plan_tensor_parallel_shard(const ModelConfig& c, int32_t rank, int32_t size) {
  if (size < 1 || rank < 0 || rank >= size)
    return make_error(fmt::format("tensor parallel: rank {} of {} ranks", rank, size));
  if (c.has_recurrent_state() && size > 1)
    return make_error(fmt::format("tensor parallel: the hybrid model {} cannot be split over ranks yet", c.architecture));
  auto refuse = [&](int64_t count, const char* what) {
    return make_error(fmt::format("tensor parallel {}: {} {} do not split over {} ranks", size, count, what, size));
  };
  if (c.is_mla() && size > 1)
    return make_error(fmt::format("tensor parallel {}: multi-head latent attention ({}) is not split yet", size,
                                  c.architecture));
  if (c.num_experts > 0 && size > 1)
    return make_error(
        fmt::format("tensor parallel {}: a mixture-of-experts model ({}) is not split yet", size, c.architecture));
  if (c.num_heads % size != 0) return refuse(c.num_heads, "attention heads");
  if (c.hidden_dim % size != 0) return refuse(c.hidden_dim, "FFN units");
  TensorParallelShard s;
  s.rank = rank;
  s.size = size;
  s.num_q_heads = c.num_heads / size;
  s.q_head_begin = rank * s.num_q_heads;
  const int32_t group = c.num_heads / c.num_kv_heads;
  if (c.num_kv_heads % size == 0) {
    s.num_kv_heads = c.num_kv_heads / size;
    s.kv_head_begin = rank * s.num_kv_heads;
  } else if (size % c.num_kv_heads == 0 && group % s.num_q_heads == 0) {
    // Fewer K/V heads than ranks: each rank keeps a copy of the one its query heads share.
    s.num_kv_heads = 1;
    s.kv_head_begin = s.q_head_begin / group;
  } else {
    return refuse(c.num_kv_heads, "key/value heads");
  }
  s.hidden_len = c.hidden_dim / size;
  s.hidden_begin = rank * s.hidden_len;
  even_range(c.vocab_size, rank, size, s.vocab_begin, s.vocab_len);
  for (int32_t r = 0; r < size; ++r) {
    int32_t begin = 0, len = 0;
    even_range(c.vocab_size, r, size, begin, len);
    s.vocab_counts.push_back(len);
  }
  return s;
}

ModelConfig shard_model_config(const ModelConfig& full, const TensorParallelShard& s) {
  ModelConfig c = full;
  c.num_heads = s.num_q_heads;
  c.num_kv_heads = s.num_kv_heads;
  c.hidden_dim = s.hidden_len;
  return c;
}

Result<ModelWeights> shard_model_weights(const ModelWeights& full, const ModelConfig& c, const TensorParallelShard& s) {
  ModelWeights out;
  out.owned_storage = full.owned_storage;
  const int64_t head_dim = c.head_dim;
  const int64_t q_begin = s.q_head_begin * head_dim, q_len = s.num_q_heads * head_dim;
  const int64_t kv_begin = s.kv_head_begin * head_dim, kv_len = s.num_kv_heads * head_dim;
  out.token_embd = row_slice(full.token_embd, s.vocab_begin, s.vocab_len);
  out.output =
      full.output.data == full.token_embd.data ? out.token_embd : row_slice(full.output, s.vocab_begin, s.vocab_len);
  out.output_norm = full.output_norm;
  for (size_t l = 0; l < full.layers.size(); ++l) {
    const LayerWeights& f = full.layers[l];
    LayerWeights w;
    const std::string layer = fmt::format("blk.{}", l);
    w.attn_norm = f.attn_norm;
    w.ffn_norm = f.ffn_norm;
    w.q_norm = f.q_norm;  // per head, the same for every head
    w.k_norm = f.k_norm;
    w.wq = row_slice(f.wq, q_begin, q_len);
    w.wk = row_slice(f.wk, kv_begin, kv_len);
    w.wv = row_slice(f.wv, kv_begin, kv_len);
    w.bq = slice(f.bq, q_begin, q_len);
    w.bk = slice(f.bk, kv_begin, kv_len);
    w.bv = slice(f.bv, kv_begin, kv_len);
    PAGODA_ASSIGN_OR_RETURN(w.wo,
                            column_slice(f.wo, q_begin, q_len, (layer + ".attn_output").c_str(), out.owned_storage));
    w.w_gate = row_slice(f.w_gate, s.hidden_begin, s.hidden_len);
    w.w_up = row_slice(f.w_up, s.hidden_begin, s.hidden_len);
    PAGODA_ASSIGN_OR_RETURN(w.w_down, column_slice(f.w_down, s.hidden_begin, s.hidden_len,
                                                   (layer + ".ffn_down").c_str(), out.owned_storage));
    out.layers.push_back(std::move(w));
  }
  return out;
}

}  // namespace pagoda
