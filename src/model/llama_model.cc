// The Llama-block forward pass, written to read like the paper: one loop over layers, each an attention block and
// an FFN block (dense, or the experts of moe_ffn.cc) with pre-norm and residual adds, each family's extras where
// ModelConfig switches them on. Attention reads K/V through the block tables. With
// ModelOptions::fusion the norm, projection, SwiGLU and residual steps run as the fused ops of
// llama_fused_ops.cc instead (same bits, fewer passes and pool jobs).
#include "model/llama_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/collectives.h"
#include "model/linear_observer.h"
#include "model/rope_tables.h"
#include "quant/kv_int8.h"
#include "quant/kv_row.h"

namespace pagoda {

LlamaModel::LlamaModel(ModelConfig config, ModelWeights weights, const kernels::KernelTable& kernels,
                       const ModelOptions& options)
    : config_(std::move(config)), weights_(std::move(weights)), kernels_(kernels), options_(options) {
  shard_.num_q_heads = config_.num_heads;
  shard_.num_kv_heads = config_.num_kv_heads;
  shard_.hidden_len = config_.hidden_dim;
  shard_.vocab_len = config_.vocab_size;
  shard_.vocab_counts = {config_.vocab_size};
  unit_weights_.assign(size_t(std::max(config_.max_head_dim(), config_.dim)), 1.0f);
}

LlamaModel::LlamaModel(ModelConfig config, ModelWeights weights, const kernels::KernelTable& kernels,
                       const ModelOptions& options, TensorParallelShard shard)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      kernels_(kernels),
      options_(options),
      shard_(std::move(shard)) {
  unit_weights_.assign(size_t(std::max(config_.max_head_dim(), config_.dim)), 1.0f);
  PAGODA_CHECK(
      shard_.size == 1 || (options_.tensor_parallel != nullptr && options_.tensor_parallel->size() == shard_.size &&
                           options_.tensor_parallel->rank() == shard_.rank),
      "a tensor-parallel shard needs its group");
  PAGODA_CHECK(shard_.size == 1 || !config_.has_recurrent_state(), "a hybrid model cannot be split over ranks");
}

void LlamaModel::all_reduce(float* x, int64_t n) const { options_.tensor_parallel->all_reduce_sum(x, n); }

void LlamaModel::add_projection(const WeightView& w, const float* in, QuantizedInput in_q8, bool fuse,
                                const std::vector<float>& post_norm, int32_t n, Workspace& ws, ThreadPool& pool,
                                const std::vector<float>& bias) const {
  // Under tensor parallelism each rank's projection is a partial sum over its heads (or its FFN units): the ranks
  // add theirs up before the residual add, so no fused add.
  const bool transform = transforms_residual(post_norm);
  if (fuse && !tensor_parallel() && !transform && bias.empty()) {
    linear_add_fused(w, in, in_q8, n, ws, pool);
    return;
  }
  linear(w, in, ws.proj.data(), n, ws, pool);
  if (tensor_parallel()) all_reduce(ws.proj.data(), int64_t(n) * config_.dim);
  if (!bias.empty())
    for (int32_t t = 0; t < n; ++t)
      kernels_.axpy(1.0f, bias.data(), ws.proj.data() + int64_t(t) * config_.dim, config_.dim);
  if (transform) {
    add_transformed_residual(post_norm, n, ws);
  } else {
    kernels_.axpy(1.0f, ws.proj.data(), ws.x.data(), int64_t(n) * config_.dim);
  }
}

void LlamaModel::add_transformed_residual(const std::vector<float>& post_norm, int32_t n, Workspace& ws) const {
  const int32_t dim = config_.dim;
  const float scale = config_.residual_scale != 0.0f ? config_.residual_scale : 1.0f;
  for (int32_t t = 0; t < n; ++t) {
    float* p = ws.proj.data() + int64_t(t) * dim;
    if (!post_norm.empty()) kernels_.rmsnorm(p, post_norm.data(), p, dim, config_.rms_eps);
    kernels_.axpy(scale, p, ws.x.data() + int64_t(t) * dim, dim);
  }
}

float LlamaModel::attention_scale() const {
  if (config_.is_mla()) return mla_score_scale(config_);
  return config_.attention_scale > 0.0f ? config_.attention_scale : 1.0f / std::sqrt(float(config_.head_dim));
}

void LlamaModel::tensor_parallel_logits(int32_t num_rows, Workspace& ws, ThreadPool& pool) const {
  // Local columns first, [num_rows][vocab_len] at the front of ws.logits.
  if (num_rows > 0) linear(weights_.output, ws.final_x.data(), ws.logits.data(), num_rows, ws, pool);
  const int64_t vocab = config_.vocab_size;
  std::vector<int64_t> counts;
  for (int64_t c : shard_.vocab_counts) counts.push_back(c * num_rows);
  if (ws.logits_gather.size() < size_t(num_rows * vocab)) ws.logits_gather.resize(size_t(num_rows * vocab));
  options_.tensor_parallel->gather_to_root(ws.logits.data(), counts, ws.logits_gather.data());
  if (shard_.rank != 0) return;
  const float* from = ws.logits_gather.data();
  int64_t col = 0;
  for (int64_t c : shard_.vocab_counts) {
    for (int32_t r = 0; r < num_rows; ++r)
      std::memcpy(ws.logits.data() + r * vocab + col, from + r * c, sizeof(float) * size_t(c));
    from += c * num_rows;
    col += c;
  }
}

LlamaModel::MatmulKernels LlamaModel::matmul_kernels(DType dtype) const {
  const kernels::MatmulKernels& k = kernels_.matmul_for(dtype);
  PAGODA_CHECK(k.f32 != nullptr, "no matmul for dtype {}", dtype_name(dtype));
  return {k.f32, k.q8_0, k.q8_K};
}

// Decode and small batches split the output rows, so every thread streams its own part of the weights once
// (for a quantized weight, the batch's activations are quantized once, up front); large prefill batches split
// the tokens, so each thread runs the kernel's multi-token path over all rows. Either way a token's result is
// the same bits: the kernels compute each token alone, whatever its neighbours.
void LlamaModel::linear(const WeightView& w, const float* x, float* y, int32_t num_tokens, Workspace& ws,
                        ThreadPool& pool) const {
  if (options_.linear_observer != nullptr) options_.linear_observer->observe(w, x, num_tokens);
  auto [fn, fn_xq, fn_xqk] = matmul_kernels(w.dtype);
  if (w.input_scale != nullptr) {
    // AWQ: the weights are W diag(s), so the product needs x diag(s)^-1 (input_scale holds s^-1).
    PAGODA_CHECK(int64_t(ws.x_scaled.size()) >= int64_t(num_tokens) * w.num_cols);
    float* scaled = ws.x_scaled.data();
    pool.parallel_for(num_tokens, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        for (int64_t i = 0; i < w.num_cols; ++i) scaled[t * w.num_cols + i] = x[t * w.num_cols + i] * w.input_scale[i];
    });
    x = scaled;
  }
  if (num_tokens == 1) {
    pool.parallel_for(w.num_rows, kRowGrain,
                      [&](int64_t begin, int64_t end) { fn(w.row(begin), x, y + begin, end - begin, w.num_cols, 1); });
  } else if (kernels_.matmul_for(w.dtype).int8 != nullptr && num_tokens <= Workspace::kMaxRowSplitTokens) {
    const kernels::MatmulInt8Fn int8_xq = kernels_.matmul_for(w.dtype).int8;
    PAGODA_CHECK(int64_t(ws.xq_int8.size()) >= num_tokens * w.num_cols);
    int8_t* xq = ws.xq_int8.data();
    float* x_scales = ws.xq_int8_scales.data();
    pool.parallel_for(num_tokens, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        x_scales[t] = kernels_.quantize_row_int8(x + t * w.num_cols, xq + t * w.num_cols, w.num_cols);
    });
    pool.parallel_for(w.num_rows, kRowGrain, [&](int64_t begin, int64_t end) {
      int8_xq(w.row(begin), xq, x_scales, y + begin, end - begin, w.num_cols, num_tokens, w.num_rows);
    });
  } else if (fn_xq != nullptr && num_tokens <= Workspace::kMaxRowSplitTokens) {
    const int64_t num_blocks = w.num_cols / quant::BlockQ8_0::kNumValues;
    PAGODA_CHECK(int64_t(ws.xq.size()) >= num_tokens * num_blocks);
    quant::BlockQ8_0* xq = ws.xq.data();
    pool.parallel_for(num_tokens, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        kernels_.quantize_row_q8_0(x + t * w.num_cols, xq + t * num_blocks, w.num_cols);
    });
    pool.parallel_for(w.num_rows, kRowGrain, [&](int64_t begin, int64_t end) {
      fn_xq(w.row(begin), xq, y + begin, end - begin, w.num_cols, num_tokens, w.num_rows);
    });
  } else if (fn_xqk != nullptr && num_tokens <= Workspace::kMaxRowSplitTokens) {
    const int64_t num_blocks = w.num_cols / quant::kQK_K;
    PAGODA_CHECK(int64_t(ws.xqk.size()) >= num_tokens * num_blocks);
    quant::BlockQ8_K* xq = ws.xqk.data();
    pool.parallel_for(num_tokens, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        kernels_.quantize_row_q8_K(x + t * w.num_cols, xq + t * num_blocks, w.num_cols);
    });
    pool.parallel_for(w.num_rows, kRowGrain, [&](int64_t begin, int64_t end) {
      fn_xqk(w.row(begin), xq, y + begin, end - begin, w.num_cols, num_tokens, w.num_rows);
    });
  } else {
    pool.parallel_for(num_tokens, kTokenGrain, [&](int64_t begin, int64_t end) {
      fn(w.data, x + begin * w.num_cols, y + begin * w.num_rows, w.num_rows, w.num_cols, end - begin);
    });
  }
}

bool LlamaModel::fuses(const LayerWeights& lw) const {
  // The fused ops read the normed input straight into the matmuls: an observer (AWQ calibration) would not see
  // it, and an AWQ input scale would not be applied, so such layers run unfused.
  if (!options_.fusion || options_.linear_observer != nullptr) return false;
  if (!config_.pre_norms) return false;  // the fused ops begin with the pre-norm
  if (config_.has_layer_shapes()) return false;  // they size every layer alike
  for (const WeightView* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down, &lw.dn_qkv, &lw.dn_z,
                              &lw.dn_beta, &lw.dn_alpha, &lw.dn_beta_alpha, &lw.dn_out})
    if (w->input_scale != nullptr) return false;
  return true;
}

void LlamaModel::embed(TokenId token, float* out) const {
  const WeightView& e = weights_.token_embd;
  const int64_t local = int64_t(token) - shard_.vocab_begin;  // a shard holds rows of its vocabulary only
  if (local < 0 || local >= shard_.vocab_len) {
    std::memset(out, 0, sizeof(float) * size_t(e.num_cols));
    return;
  }
  dequantize_row(e.dtype, e.row(local), out, e.num_cols);
}

namespace {

constexpr int32_t kMaxHeadDim = 1024;  // stack rows for one head (int8 fused writes, naive int8 reads)

void store_int8_heads(const float* x, int8_t* q, float* scales, int32_t num_heads, int32_t head_dim) {
  for (int32_t h = 0; h < num_heads; ++h) scales[h] = quantize_kv_int8(x + h * head_dim, head_dim, q + h * head_dim);
}

}  // namespace

void LlamaModel::write_kv(const BatchView& batch, const KvCacheView& kv, int32_t layer, int32_t t, const float* cs,
                          const float* sn, Workspace& ws) const {
  const int32_t kv_dim = config_.layer_kv_dim(layer), head_dim = config_.layer_head_dim(layer);
  const int32_t half_rope = config_.layer_rope_dim(layer) / 2, num_kv_heads = config_.layer_num_kv_heads(layer);
  const int32_t kvl = config_.kv_layer(layer);  // the cache's layer: only writing attention layers get here
  const int64_t slot = batch.slot_ids[t];
  PAGODA_CHECK(slot >= 0 && slot < kv.num_slots, "slot {} outside the KV cache", slot);
  float* k = ws.k.data() + int64_t(t) * kv_dim;
  const float* v = ws.v.data() + int64_t(t) * kv_dim;
  // K: an f32 cache takes the rotation straight in under fusion; an int8 one quantizes per head as it goes in (fusion
  // rotates one head at a time through a stack row instead of the whole K row in the workspace); the other types
  // convert the rotated row.
  if (kv.k_dtype == KvDType::kF32 && options_.fusion) {
    kernels_.rope(k, kv.k_at(kvl, slot), num_kv_heads, head_dim, half_rope, cs, sn, config_.rope_neox);
  } else if (kv.k_dtype == KvDType::kInt8 && options_.fusion) {
    float rotated[kMaxHeadDim];
    PAGODA_CHECK(head_dim <= kMaxHeadDim);
    for (int32_t h = 0; h < num_kv_heads; ++h) {
      kernels_.rope(k + h * head_dim, rotated, 1, head_dim, half_rope, cs, sn, config_.rope_neox);
      kv.k_scale_at(kvl, slot)[h] = quantize_kv_int8(rotated, head_dim, kv.k8_at(kvl, slot) + h * head_dim);
    }
  } else {
    kernels_.rope(k, k, num_kv_heads, head_dim, half_rope, cs, sn, config_.rope_neox);
    if (kv.k_dtype == KvDType::kInt8)
      store_int8_heads(k, kv.k8_at(kvl, slot), kv.k_scale_at(kvl, slot), num_kv_heads, head_dim);
    else
      kernels_.quantize_kv_row(kv.k_dtype, k, kv_dim, kv.k_row(kvl, slot));
  }
  if (kv.v_dtype == KvDType::kInt8)
    store_int8_heads(v, kv.v8_at(kvl, slot), kv.v_scale_at(kvl, slot), num_kv_heads, head_dim);
  else
    kernels_.quantize_kv_row(kv.v_dtype, v, kv_dim, kv.v_row(kvl, slot));
}

void LlamaModel::attention(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                           ThreadPool& pool) const {
  PAGODA_CHECK(pool.num_threads() <= ws.num_threads, "pool of {} threads, workspace sized for {}", pool.num_threads(),
               ws.num_threads);
  for (int32_t s = 0; s < batch.num_seqs(); ++s)
    for (int32_t t = batch.seq_starts[s]; t < batch.seq_starts[s + 1]; ++t)
      PAGODA_CHECK(batch.positions[t] + 1 <= batch.context_lens[s] && batch.positions[t] < ws.max_context,
                   "position {} is past the context ({} tokens)", batch.positions[t], batch.context_lens[s]);
  if (options_.attention == AttentionKind::kNaive) {
    attention_naive(batch, kv, layer, ws, pool);
  } else {
    attention_flash(batch, kv, layer, ws, pool);
  }
}

// One work item per (query block, KV head): the kernel reads each K/V row once for the whole query group and for up
// to kQueryBlock consecutive tokens of one sequence (a prefill chunk), each token getting the bits it would alone. A
// sequence's single token (decode) is one item per thread instead, a run of consecutive KV heads each: one KV head's
// rows lie a whole cache row apart, and its thread's share of the row read position by position is one contiguous
// run (the kernel gives each head the same bits as an item of its own).
void LlamaModel::attention_flash(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                                 ThreadPool& pool) const {
  constexpr int32_t kQueryBlock = 32;
  const int32_t head_dim = config_.layer_head_dim(layer), num_kv_heads = config_.layer_num_kv_heads(layer);
  const int32_t q_dim = config_.layer_q_dim(layer);
  const int32_t window = config_.is_swa_layer(layer) ? config_.sliding_window : 0;
  const int32_t group = config_.num_heads / num_kv_heads;
  const int32_t kvl = config_.kv_layer(layer);  // the cache's layer this one reads
  const int32_t decode_runs = std::min(pool.num_threads(), num_kv_heads);
  // Each sequence's tokens in blocks of kQueryBlock from its first, each block's KV heads in runs.
  auto blocks_of = [&](int32_t s) {
    return (batch.seq_starts[s + 1] - batch.seq_starts[s] + kQueryBlock - 1) / kQueryBlock;
  };
  auto runs_of = [&](int32_t s) {
    return batch.seq_starts[s + 1] - batch.seq_starts[s] == 1 ? decode_runs : num_kv_heads;
  };
  auto items_of = [&](int32_t s) { return int64_t(blocks_of(s)) * runs_of(s); };
  int64_t num_items = 0;
  for (int32_t s = 0; s < batch.num_seqs(); ++s) num_items += items_of(s);
  pool.run([&](int32_t thread_idx) {
    kernels::AttentionArgs a;
    a.num_q_heads = group;
    a.head_dim = head_dim;
    a.block_size = kv.block_size;
    a.scale = attention_scale();
    a.softcap = config_.attn_softcap;
    a.k_type = kv.k_dtype;
    a.v_type = kv.v_dtype;
    a.k_row_bytes = kv.k_row_bytes;
    a.v_row_bytes = kv.v_row_bytes;
    a.scale_stride = kv.num_kv_heads;
    // One head's offset in a slot's row (a whole number of blocks: KvStorage::kv_types_fit).
    const int64_t k_head_bytes = kv_row_bytes(kv.k_dtype, head_dim), v_head_bytes = kv_row_bytes(kv.v_dtype, head_dim);
    a.q_stride = q_dim;
    a.window = window;
    const std::vector<float>& sinks = weights_.layers[size_t(layer)].sinks;
    int32_t s = 0;
    int64_t first_item = 0;  // of sequence s
    for (int64_t item = thread_idx; item < num_items; item += pool.num_threads()) {
      while (item >= first_item + items_of(s)) first_item += items_of(s++);  // items rise: s only moves forward
      const int32_t runs = runs_of(s);
      const int64_t block = (item - first_item) / runs;
      const int32_t run = int32_t((item - first_item) % runs);
      const int32_t kvh = int32_t(int64_t(run) * num_kv_heads / runs);
      a.num_kv_heads = int32_t(int64_t(run + 1) * num_kv_heads / runs) - kvh;
      const int32_t t0 = batch.seq_starts[s] + int32_t(block) * kQueryBlock;
      const int32_t t_end = std::min(t0 + kQueryBlock, batch.seq_starts[s + 1]);
      a.k = kv.k_row(kvl, 0) + kvh * k_head_bytes;
      a.v = kv.v_row(kvl, 0) + kvh * v_head_bytes;
      if (kv.k_dtype == KvDType::kInt8) a.k_scale = kv.k_scale_at(kvl, 0) + kvh;
      if (kv.v_dtype == KvDType::kInt8) a.v_scale = kv.v_scale_at(kvl, 0) + kvh;
      a.blocks = batch.block_tables.row(s).data();
      a.sinks = sinks.empty() ? nullptr : sinks.data() + int64_t(kvh) * group;
      // The block's tokens as runs of consecutive positions (a step's tokens of one sequence are one run).
      for (int32_t t = t0, nq = 1; t < t_end; t += nq) {
        nq = 1;
        while (t + nq < t_end && batch.positions[t + nq] == batch.positions[t] + nq) ++nq;
        a.q = ws.q.data() + int64_t(t) * q_dim + int64_t(kvh) * group * head_dim;
        a.out = ws.xb.data() + int64_t(t) * q_dim + int64_t(kvh) * group * head_dim;
        a.num_queries = nq;
        a.num_ctx = batch.positions[t + nq - 1] + 1;
        kernels_.paged_attention(a);
      }
    }
  });
}

// The reference: token t of sequence s at position p attends to positions 0..p of s (from p - window + 1 on a
// sliding-window layer), whose K/V were written (this step or earlier) at the slots its block table names; all
// scores first (soft-capped when the family caps them), then softmax (with the head's sink in its denominator when the
// family has sinks), then V.
void LlamaModel::attention_naive(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                                 ThreadPool& pool) const {
  const int32_t head_dim = config_.layer_head_dim(layer), q_dim = config_.layer_q_dim(layer);
  const int32_t group = config_.num_heads / config_.layer_num_kv_heads(layer);
  const int32_t block_size = kv.block_size;
  const int32_t kvl = config_.kv_layer(layer);  // the cache's layer this one reads
  const float scale = attention_scale(), softcap = config_.attn_softcap;
  const std::vector<float>& sinks = weights_.layers[size_t(layer)].sinks;
  PAGODA_CHECK(head_dim <= kMaxHeadDim);
  const int32_t num_tokens = batch.num_tokens();
  const int64_t num_items = int64_t(num_tokens) * config_.num_heads;  // one (token, head) pair each
  pool.run([&](int32_t thread_idx) {
    float* scores = ws.scores.data() + int64_t(thread_idx) * ws.max_context;
    float row[kMaxHeadDim];
    // Position j's K or V row of this head as f32 (dequantized from a cache of another type).
    auto kv_row = [&](bool is_k, int64_t slot, int32_t kvh) -> const float* {
      const KvDType type = is_k ? kv.k_dtype : kv.v_dtype;
      if (type == KvDType::kF32) return (is_k ? kv.k_at(kvl, slot) : kv.v_at(kvl, slot)) + kvh * head_dim;
      if (type == KvDType::kInt8) {
        const int8_t* q = (is_k ? kv.k8_at(kvl, slot) : kv.v8_at(kvl, slot)) + kvh * head_dim;
        dequantize_kv_int8(q, (is_k ? kv.k_scale_at(kvl, slot) : kv.v_scale_at(kvl, slot))[kvh], head_dim, row);
        return row;
      }
      const uint8_t* packed = (is_k ? kv.k_row(kvl, slot) : kv.v_row(kvl, slot)) + kvh * kv_row_bytes(type, head_dim);
      dequantize_kv_row(type, packed, head_dim, row);
      return row;
    };
    int32_t s = 0;
    for (int64_t item = thread_idx; item < num_items; item += pool.num_threads()) {
      const int32_t t = int32_t(item / config_.num_heads);
      const int32_t h = int32_t(item % config_.num_heads);
      while (t >= batch.seq_starts[s + 1]) ++s;
      const std::span<const BlockId> blocks = batch.block_tables.row(s);
      const int32_t num_ctx = batch.positions[t] + 1;
      const int32_t begin = attention_begin(layer, batch.positions[t]);
      const float* q = ws.q.data() + int64_t(t) * q_dim + h * head_dim;
      const int32_t kvh = h / group;
      for (int32_t j = begin; j < num_ctx; ++j) {
        const int64_t slot = int64_t(blocks[j / block_size]) * block_size + j % block_size;
        float sc = kernels_.dot(q, kv_row(true, slot, kvh), head_dim) * scale;
        if (softcap > 0.0f) sc = softcap * std::tanh(sc / softcap);
        scores[j] = sc;
      }
      if (sinks.empty()) {
        kernels_.softmax(scores + begin, scores + begin, num_ctx - begin);
      } else {
        // The head's sink joins the denominator: exp(s_j - m) / (sum_j exp(s_j - m) + exp(sink - m)).
        float m = sinks[size_t(h)];
        for (int32_t j = begin; j < num_ctx; ++j) m = std::max(m, scores[j]);
        float sum = std::exp(sinks[size_t(h)] - m);
        for (int32_t j = begin; j < num_ctx; ++j) sum += (scores[j] = std::exp(scores[j] - m));
        for (int32_t j = begin; j < num_ctx; ++j) scores[j] /= sum;
      }
      float* o = ws.xb.data() + int64_t(t) * q_dim + h * head_dim;
      std::memset(o, 0, sizeof(float) * size_t(head_dim));
      for (int32_t j = begin; j < num_ctx; ++j) {
        const int64_t slot = int64_t(blocks[j / block_size]) * block_size + j % block_size;
        kernels_.axpy(scores[j], kv_row(false, slot, kvh), o, head_dim);
      }
    }
  });
}

void LlamaModel::pre_norm(const std::vector<float>& weight, int32_t n, Workspace& ws) const {
  const int32_t dim = config_.dim;
  for (int32_t t = 0; t < n; ++t) {
    const float* x = ws.x.data() + int64_t(t) * dim;
    float* out = ws.xb.data() + int64_t(t) * dim;
    if (config_.pre_norms) {
      kernels_.rmsnorm(x, weight.data(), out, dim, config_.rms_eps);
    } else {
      std::memcpy(out, x, sizeof(float) * size_t(dim));
    }
  }
}

void LlamaModel::scale_query_temperature(Pos position, float* q) const {
  // llama.cpp's llm_graph_input_attn_temp, in float: ln(floor(p / original context) + 1) * scale + 1.
  const float floor_scale = float(config_.rope_original_context > 0 ? config_.rope_original_context : config_.context_length);
  const float factor = std::log(std::floor(float(position) / floor_scale) + 1.0f) * config_.attn_temperature_scale + 1.0f;
  if (factor == 1.0f) return;
  for (int32_t i = 0; i < config_.q_dim(); ++i) q[i] *= factor;
}

void LlamaModel::add_qkv_bias_and_norm(const LayerWeights& lw, int32_t layer, int32_t n, Workspace& ws) const {
  const int32_t q_dim = config_.layer_q_dim(layer), kv_dim = config_.layer_kv_dim(layer);
  const int32_t head_dim = config_.layer_head_dim(layer);
  const bool has_kv = config_.writes_kv(layer);
  if (!lw.bq.empty()) {
    for (int32_t t = 0; t < n; ++t) {
      kernels_.axpy(1.0f, lw.bq.data(), ws.q.data() + int64_t(t) * q_dim, q_dim);
      kernels_.axpy(1.0f, lw.bk.data(), ws.k.data() + int64_t(t) * kv_dim, kv_dim);
      kernels_.axpy(1.0f, lw.bv.data(), ws.v.data() + int64_t(t) * kv_dim, kv_dim);
    }
  }
  if (!lw.q_norm.empty() && config_.qk_norm_whole) {
    // Over each token's whole projection (OLMo 2), in place.
    for (int32_t t = 0; t < n; ++t) {
      float* q = ws.q.data() + int64_t(t) * q_dim;
      float* k = ws.k.data() + int64_t(t) * kv_dim;
      kernels_.rmsnorm(q, lw.q_norm.data(), q, q_dim, config_.rms_eps);
      kernels_.rmsnorm(k, lw.k_norm.data(), k, kv_dim, config_.rms_eps);
    }
  } else if (!lw.q_norm.empty()) {
    PAGODA_CHECK(head_dim <= kMaxHeadDim);
    float row[kMaxHeadDim];
    auto norm_heads = [&](float* x, int32_t num_heads, const float* weight) {
      for (int32_t h = 0; h < num_heads; ++h) {
        kernels_.rmsnorm(x + h * head_dim, weight, row, head_dim, config_.rms_eps);
        std::memcpy(x + h * head_dim, row, sizeof(float) * size_t(head_dim));
      }
    };
    for (int32_t t = 0; t < n; ++t) {
      norm_heads(ws.q.data() + int64_t(t) * q_dim, config_.num_heads, lw.q_norm.data());
      if (has_kv) norm_heads(ws.k.data() + int64_t(t) * kv_dim, config_.layer_num_kv_heads(layer), lw.k_norm.data());
      // Gemma 4's V: per head, no weight (a weight of ones: the same bits).
      if (has_kv && config_.v_norm)
        norm_heads(ws.v.data() + int64_t(t) * kv_dim, config_.layer_num_kv_heads(layer), unit_weights_.data());
    }
  }
}

void LlamaModel::check_batch(const BatchView& batch, const KvCacheView& kv, const Workspace& ws) const {
  const int32_t n = batch.num_tokens();
  const int32_t kv_dim = config_.kv_dim();
  PAGODA_CHECK(n > 0 && n <= ws.max_tokens, "batch of {} tokens, workspace holds {}", n, ws.max_tokens);
  PAGODA_CHECK(int32_t(batch.logits_rows.size()) <= ws.max_logits_rows);
  PAGODA_CHECK(int32_t(batch.hidden_rows.size()) <= ws.max_hidden_rows, "{} hidden rows, the workspace holds {}",
               batch.hidden_rows.size(), ws.max_hidden_rows);
  PAGODA_CHECK(kv.kv_dim == kv_dim && kv.num_layers == config_.num_kv_layers() && kv.num_kv_heads == config_.num_kv_heads,
               "KV cache shaped for another model");
  // The batch's shape; a malformed batch is an engine bug, caught here rather than as a stray read.
  PAGODA_CHECK(batch.positions.size() == size_t(n) && batch.slot_ids.size() == size_t(n));
  PAGODA_CHECK(batch.num_seqs() >= 1 && batch.seq_starts.front() == 0 && batch.seq_starts.back() == n &&
               batch.context_lens.size() == size_t(batch.num_seqs()) &&
               batch.block_tables.num_seqs == batch.num_seqs() && kv.block_size > 0);
  if (config_.has_recurrent_state()) {
    PAGODA_CHECK(batch.state_slots.size() == size_t(batch.num_seqs()),
                 "a hybrid model's batch needs a recurrent-state slot per sequence ({} for {})",
                 batch.state_slots.size(), batch.num_seqs());
    PAGODA_CHECK(kv.state.floats_per_slot == config_.state_floats_per_seq(),
                 "recurrent-state slots of {} floats, the model needs {}", kv.state.floats_per_slot,
                 config_.state_floats_per_seq());
    for (int32_t slot : batch.state_slots)
      PAGODA_CHECK(slot >= 0 && slot < kv.state.num_slots, "state slot {} outside the pool of {}", slot,
                   kv.state.num_slots);
  }
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    PAGODA_CHECK(batch.seq_starts[s] <= batch.seq_starts[s + 1]);
    PAGODA_CHECK(batch.context_lens[s] <= int64_t(batch.block_tables.max_blocks_per_seq) * kv.block_size,
                 "sequence {} sees {} tokens but its block table holds {} blocks of {}", s, batch.context_lens[s],
                 batch.block_tables.max_blocks_per_seq, kv.block_size);
    const int32_t num_blocks_used = (batch.context_lens[s] + kv.block_size - 1) / kv.block_size;
    for (int32_t j = 0; j < num_blocks_used; ++j) {
      const int64_t block = batch.block_tables.row(s)[size_t(j)];
      PAGODA_CHECK(block >= 0 && block * kv.block_size < kv.num_slots, "block id {} outside the KV cache", block);
    }
  }
}

LogitsView LlamaModel::forward(const BatchView& batch, const KvCacheView& kv, Workspace& ws, ThreadPool& pool) const {
  forward_hidden(batch, nullptr, kv, ws, pool);
  return forward_logits(batch, ws, pool);
}

const float* LlamaModel::forward_hidden(const BatchView& batch, const float* hidden_in, const KvCacheView& kv,
                                        Workspace& ws, ThreadPool& pool) const {
  check_batch(batch, kv, ws);
  const int32_t n = batch.num_tokens();
  const int32_t dim = config_.dim;
  if (hidden_in == nullptr) {
    PAGODA_CHECK(weights_.token_embd.data != nullptr, "this pipeline stage has no embedding: it needs hidden states");
    for (int32_t t = 0; t < n; ++t) {
      PAGODA_CHECK(batch.tokens[t] >= 0 && batch.tokens[t] < config_.vocab_size, "token id {} out of range",
                   batch.tokens[t]);
      embed(batch.tokens[t], ws.x.data() + int64_t(t) * dim);
    }
    if (tensor_parallel()) all_reduce(ws.x.data(), int64_t(n) * dim);  // each token's row came from one rank
  } else if (hidden_in != ws.x.data()) {
    std::memcpy(ws.x.data(), hidden_in, sizeof(float) * size_t(n) * size_t(dim));
  }
  if (hidden_in == nullptr && config_.embedding_scale > 0.0f)
    for (int64_t i = 0; i < int64_t(n) * dim; ++i) ws.x[size_t(i)] *= config_.embedding_scale;
  if (config_.per_layer_input_dim > 0) {
    PAGODA_CHECK(hidden_in == nullptr, "per-layer embeddings need the tokens");
    per_layer_inputs(batch, ws, pool);
  }
  // RoPE angles once per step, for the full-attention layers and (when they differ) the windowed ones.
  fill_rope_tables(config_, batch.positions, rope_params(config_, false), ws.rope_context, ws.rope_cos.data(),
                   ws.rope_sin.data());
  const bool swa_rope = config_.rope_theta_swa > 0.0f || config_.rope_freq_scale_swa > 0.0f || config_.rope_dim_swa > 0;
  if (swa_rope)
    fill_rope_tables(config_, batch.positions, rope_params(config_, true), ws.rope_context, ws.rope_cos_swa.data(),
                     ws.rope_sin_swa.data());
  // A sequence that starts at position 0 this step starts from a zero recurrent state (a new prompt, or one
  // recomputed after preemption); the others continue theirs.
  if (config_.has_recurrent_state())
    for (int32_t s = 0; s < batch.num_seqs(); ++s)
      if (batch.seq_starts[s] < batch.seq_starts[s + 1] && batch.positions[batch.seq_starts[s]] == 0)
        std::memset(kv.state.slot(batch.state_slots[s]), 0, sizeof(float) * size_t(kv.state.floats_per_slot));

  for (int32_t l = 0; l < config_.num_layers; ++l) {
    const LayerWeights& lw = weights_.layers[size_t(l)];
    const bool fuse = fuses(lw);
    if (config_.is_conv_layer(l)) {
      if (config_.is_delta_net()) {
        delta_net_block(batch, kv, l, ws, pool);
      } else {
        short_conv_block(batch, kv, l, ws, pool);
      }
      ffn_block(lw, l, fuse, n, ws, pool);
      continue;
    }
    if (config_.is_mla()) {
      mla_attention_block(batch, kv, l, ws, pool);
      ffn_block(lw, l, fuse, n, ws, pool);
      continue;
    }
    const int32_t head_dim = config_.layer_head_dim(l), half_rope = config_.layer_rope_dim(l) / 2;
    const int32_t q_dim = config_.layer_q_dim(l);
    const bool writes_kv = config_.writes_kv(l);  // else it reads an earlier layer's K/V
    // Attention block.
    // Gated attention's projection rows: each head's query, then its gate; split into ws.q and ws.attn_gate.
    auto split_query_and_gate = [&] {
      for (int32_t t = 0; t < n; ++t)
        for (int32_t h = 0; h < config_.num_heads; ++h) {
          const float* from = ws.q_and_gate.data() + (int64_t(t) * config_.num_heads + h) * 2 * head_dim;
          const int64_t to = int64_t(t) * q_dim + int64_t(h) * head_dim;
          std::memcpy(ws.q.data() + to, from, sizeof(float) * size_t(head_dim));
          std::memcpy(ws.attn_gate.data() + to, from + head_dim, sizeof(float) * size_t(head_dim));
        }
    };
    if (fuse && !config_.attn_output_gate) {
      qkv_fused(lw, n, ws, pool);
    } else if (fuse && writes_kv && !config_.layer_v_is_k(l)) {
      const FusedProjection parts[] = {{&lw.wq, ws.q_and_gate.data()}, {&lw.wk, ws.k.data()}, {&lw.wv, ws.v.data()}};
      norm_and_project(lw.attn_norm, parts, n, ws, pool);
      split_query_and_gate();
    } else {
      pre_norm(lw.attn_norm, n, ws);
      if (config_.attn_output_gate) {
        linear(lw.wq, ws.xb.data(), ws.q_and_gate.data(), n, ws, pool);
        split_query_and_gate();
      } else {
        linear(lw.wq, ws.xb.data(), ws.q.data(), n, ws, pool);
      }
      if (writes_kv) {
        linear(lw.wk, ws.xb.data(), ws.k.data(), n, ws, pool);
        if (config_.layer_v_is_k(l)) {
          std::memcpy(ws.v.data(), ws.k.data(), sizeof(float) * size_t(n) * size_t(config_.layer_kv_dim(l)));
        } else {
          linear(lw.wv, ws.xb.data(), ws.v.data(), n, ws, pool);
        }
      }
    }
    add_qkv_bias_and_norm(lw, l, n, ws);
    const bool layer_swa_rope = swa_rope && config_.is_swa_layer(l);
    const float* rope_cos = layer_swa_rope ? ws.rope_cos_swa.data() : ws.rope_cos.data();
    const float* rope_sin = layer_swa_rope ? ws.rope_sin_swa.data() : ws.rope_sin.data();
    const bool rotates = !config_.skips_rope(l);  // a NoPE layer writes K as is (identity tables: cos 1, sin 0)
    for (int32_t t = 0; t < n; ++t) {
      const float* cs = rotates ? rope_cos + size_t(t) * half_rope : ws.rope_identity_cos.data();
      const float* sn = rotates ? rope_sin + size_t(t) * half_rope : ws.rope_identity_sin.data();
      float* q = ws.q.data() + int64_t(t) * q_dim;
      if (rotates) kernels_.rope(q, q, config_.num_heads, head_dim, half_rope, cs, sn, config_.rope_neox);
      if (config_.attn_temperature_scale != 0.0f) scale_query_temperature(batch.positions[t], q);
      if (writes_kv) write_kv(batch, kv, l, t, cs, sn, ws);
    }
    attention(batch, kv, l, ws, pool);
    if (config_.attn_output_gate)
      for (int64_t i = 0; i < int64_t(n) * q_dim; ++i)
        ws.xb[size_t(i)] *= 1.0f / (1.0f + std::exp(-ws.attn_gate[size_t(i)]));
    add_projection(lw.wo, ws.xb.data(), {}, fuse, lw.attn_post_norm, n, ws, pool, lw.bo);

    ffn_block(lw, l, fuse, n, ws, pool);
  }

  return ws.x.data();
}

// Gemma 4's per-layer inputs, [n][num_layers][P] in ws.per_layer_in: (rmsnorm(W x / sqrt(dim)) + E[token] *
// sqrt(P)) / sqrt(2), with x the scaled embedding and E the per-layer table, in llama.cpp's order of operations.
void LlamaModel::per_layer_inputs(const BatchView& batch, Workspace& ws, ThreadPool& pool) const {
  const int32_t n = batch.num_tokens(), pl = config_.per_layer_input_dim;
  const int64_t all = int64_t(config_.num_layers) * pl;
  linear(weights_.per_layer_model_proj, ws.x.data(), ws.per_layer_in.data(), n, ws, pool);
  const float proj_scale = 1.0f / std::sqrt(float(config_.dim)), embd_scale = std::sqrt(float(pl));
  const float mix_scale = 1.0f / std::sqrt(2.0f);
  pool.parallel_for(n, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(all));
    const WeightView& e = weights_.per_layer_token_embd;
    for (int64_t t = begin; t < end; ++t) {
      dequantize_row(e.dtype, e.row(batch.tokens[t]), row.data(), all);
      float* in = ws.per_layer_in.data() + t * all;
      for (int64_t i = 0; i < all; ++i) in[i] *= proj_scale;
      for (int32_t l = 0; l < config_.num_layers; ++l)
        kernels_.rmsnorm(in + l * pl, weights_.per_layer_proj_norm.data(), in + l * pl, pl, config_.rms_eps);
      for (int64_t i = 0; i < all; ++i) in[i] = (in[i] + row[size_t(i)] * embd_scale) * mix_scale;
    }
  });
}

// x += rmsnorm(W_proj (gelu(W_gate x) * input of this layer)).
void LlamaModel::add_per_layer_input(const LayerWeights& lw, int32_t layer, int32_t n, Workspace& ws,
                                     ThreadPool& pool) const {
  const int32_t pl = config_.per_layer_input_dim;
  const int64_t all = int64_t(config_.num_layers) * pl;
  linear(lw.per_layer_gate, ws.x.data(), ws.per_layer_gate.data(), n, ws, pool);
  for (int32_t t = 0; t < n; ++t)
    activation_mul(ws.per_layer_gate.data() + int64_t(t) * pl, ws.per_layer_in.data() + t * all + int64_t(layer) * pl,
                   pl);
  linear(lw.per_layer_proj, ws.per_layer_gate.data(), ws.proj.data(), n, ws, pool);
  add_transformed_residual(lw.per_layer_post_norm, n, ws);
}

// FFN block: w_down(act(w_gate x) * w_up x), or the mixture of experts; then the layer's per-layer input (Gemma 4)
// and its output scale.
void LlamaModel::ffn_block(const LayerWeights& lw, int32_t layer, bool fuse, int32_t n, Workspace& ws,
                           ThreadPool& pool) const {
  if (!lw.experts.empty()) {
    moe_ffn(lw, n, ws, pool);
  } else {
    if (fuse) {
      gate_up_fused(lw, n, ws, pool);
    } else {
      pre_norm(lw.ffn_norm, n, ws);
      linear(lw.w_gate, ws.xb.data(), ws.gate.data(), n, ws, pool);
      linear(lw.w_up, ws.xb.data(), ws.up.data(), n, ws, pool);
      activation_mul(ws.gate.data(), ws.up.data(), int64_t(n) * config_.layer_hidden_dim(layer));
    }
    add_projection(lw.w_down, ws.gate.data(),
                   {reads_q8(lw.w_down.dtype) ? ws.hq.data() : nullptr,
                    reads_q8_K(lw.w_down.dtype) ? ws.hqk.data() : nullptr},
                   fuse,
                   lw.ffn_post_norm, n, ws, pool);
  }
  if (config_.per_layer_input_dim > 0) add_per_layer_input(lw, layer, n, ws, pool);
  if (lw.output_scale != 1.0f)
    for (int64_t i = 0; i < int64_t(n) * config_.dim; ++i) ws.x[size_t(i)] *= lw.output_scale;
}

// LFM2's short-convolution block, as llama.cpp's build_shortconv_block: B, C, x = in_proj(rmsnorm(x)); each
// sequence's B * x runs through the causal convolution from its state (kernels.h's short_conv), which carries the
// window to the sequence's next step; the block adds out_proj(C * conv) to the residual.
void LlamaModel::short_conv_block(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                                  ThreadPool& pool) const {
  const LayerWeights& lw = weights_.layers[size_t(layer)];
  const int32_t n = batch.num_tokens(), dim = config_.dim;
  pre_norm(lw.attn_norm, n, ws);
  float* bcx = ws.conv_bcx.data();
  linear(lw.conv_in, ws.xb.data(), bcx, n, ws, pool);
  float* bx = ws.xb.data();  // [n][dim]: B * x, then the convolution's output in place
  for (int32_t t = 0; t < n; ++t) {
    const float* row = bcx + int64_t(t) * 3 * dim;
    for (int32_t c = 0; c < dim; ++c) bx[int64_t(t) * dim + c] = row[c] * row[2 * dim + c];
  }
  const int64_t state_offset = int64_t(config_.conv_layers_before(layer)) * config_.conv_state_floats();
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    const int32_t begin = batch.seq_starts[s], len = batch.seq_starts[s + 1] - begin;
    if (len == 0) continue;
    float* state = kv.state.slot(batch.state_slots[s]) + state_offset;
    float* seq_bx = bx + int64_t(begin) * dim;
    kernels_.short_conv(lw.conv_taps.data(), state, seq_bx, seq_bx, dim, config_.shortconv_l_cache, len);
  }
  for (int32_t t = 0; t < n; ++t) {
    const float* c_gate = bcx + int64_t(t) * 3 * dim + dim;
    for (int32_t c = 0; c < dim; ++c) bx[int64_t(t) * dim + c] *= c_gate[c];
  }
  add_projection(lw.conv_out, bx, {}, fuses(lw), lw.attn_post_norm, n, ws, pool);
}

LogitsView LlamaModel::forward_logits(const BatchView& batch, Workspace& ws, ThreadPool& pool) const {
  // Final norm and classifier only for the rows that need logits.
  PAGODA_CHECK(weights_.output.data != nullptr, "this pipeline stage has no classifier");
  const int32_t n = batch.num_tokens(), dim = config_.dim;
  const int32_t num_rows = int32_t(batch.logits_rows.size());
  for (int32_t r = 0; r < num_rows; ++r) {
    const int32_t t = batch.logits_rows[r];
    PAGODA_CHECK(t >= 0 && t < n);
    kernels_.rmsnorm(ws.x.data() + int64_t(t) * dim, weights_.output_norm.data(), ws.final_x.data() + int64_t(r) * dim,
                     dim, config_.rms_eps);
  }
  if (tensor_parallel()) {
    tensor_parallel_logits(num_rows, ws, pool);  // every rank calls it, with or without rows
  } else if (num_rows > 0) {
    linear(weights_.output, ws.final_x.data(), ws.logits.data(), num_rows, ws, pool);
  }
  // Granite divides the logits; Gemma soft-caps them: l -> cap * tanh(l / cap).
  const int64_t num_logits = int64_t(num_rows) * config_.vocab_size;
  if (config_.logit_scale > 0.0f && config_.logit_scale != 1.0f) {
    const float inv_scale = 1.0f / config_.logit_scale;  // llama.cpp's ggml_scale by the reciprocal
    for (int64_t i = 0; i < num_logits; ++i) ws.logits[size_t(i)] *= inv_scale;
  }
  if (config_.final_softcap > 0.0f) {
    const float cap = config_.final_softcap, inv_cap = 1.0f / config_.final_softcap;
    for (int64_t i = 0; i < num_logits; ++i) ws.logits[size_t(i)] = cap * std::tanh(ws.logits[size_t(i)] * inv_cap);
  }
  // The hidden rows asked for (pooling) get the final norm only; every rank of a tensor-parallel group holds the
  // whole residual stream, so each computes them alike.
  const int32_t num_hidden_rows = int32_t(batch.hidden_rows.size());
  for (int32_t r = 0; r < num_hidden_rows; ++r) {
    const int32_t t = batch.hidden_rows[r];
    PAGODA_CHECK(t >= 0 && t < n);
    kernels_.rmsnorm(ws.x.data() + int64_t(t) * dim, weights_.output_norm.data(), ws.hidden.data() + int64_t(r) * dim,
                     dim, config_.rms_eps);
  }
  return LogitsView{ws.logits.data(), num_rows, config_.vocab_size, ws.hidden.data(), num_hidden_rows, dim};
}

void LlamaModel::rank(std::span<const float> pooled, std::span<float> out) const {
  PAGODA_CHECK(num_rank_outputs() > 0, "this model has no classification head");
  PAGODA_CHECK(int64_t(pooled.size()) == config_.dim && int32_t(out.size()) == num_rank_outputs(),
               "rank head: {} in, {} out", pooled.size(), out.size());
  const WeightView& head = weights_.cls_out;
  matmul_kernels(head.dtype).f32_input(head.data, pooled.data(), out.data(), head.num_rows, head.num_cols, 1);
  // ggml's soft_max: the exponentials of the outputs less their maximum, over their sum.
  const float max = *std::max_element(out.begin(), out.end());
  double sum = 0.0;
  for (float& v : out) {
    v = std::exp(v - max);
    sum += v;
  }
  for (float& v : out) v = float(double(v) / sum);
}

}  // namespace pagoda
