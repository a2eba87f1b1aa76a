// AttentionArgs: one work item of paged attention, a plain value of pointers and sizes: the query heads that
// share one KV head (grouped-query attention), for num_queries consecutive query tokens of one sequence (causal:
// the last sees context positions 0..num_ctx-1, query i of them 0..num_ctx-num_queries+i), whose K/V rows are found
// through the sequence's block table. Each query's result is the bits it would get as a work item of its own. Position
// j lives in slot blocks[j / block_size] * block_size + j % block_size; slot s's K row (head_dim values of k_type)
// starts at k + s * k_row_bytes, its V row at v + s * v_row_bytes; a kInt8 side's scale of slot s is at
// k_scale[s * scale_stride] (v_scale likewise).
#pragma once

#include <cstdint>

#include "core/types.h"

namespace pagoda::kernels {

struct AttentionArgs {
  const float* q = nullptr;  // query i's heads at q + i * q_stride: [num_q_heads][head_dim], one after another
  float* out = nullptr;      // the same shape at out + i * q_stride; written, never read before
  int32_t num_q_heads = 1;
  int32_t head_dim = 0;
  int32_t num_ctx = 0;      // the last query's context, >= num_queries
  int32_t num_queries = 1;  // consecutive positions of one sequence
  // > 0: a sliding window, each query sees only the last `window` positions of its context (from its own
  // num_ctx - window on); 0: the whole context.
  int32_t window = 0;
  int64_t q_stride = 0;     // floats from one query's q (and out) to the next
  const int32_t* blocks = nullptr;
  int32_t block_size = 0;
  float scale = 1.0f;      // applied to q.k (1 / sqrt(head_dim))
  float softcap = 0.0f;    // > 0: each scaled score s becomes softcap * tanh(s / softcap) (Gemma 2); 0: none
  // Attention sinks (gpt-oss): one learned logit per query head of this item ([num_q_heads]), in the units of the
  // scaled scores, that joins its head's softmax denominator as a position with no value: each head's output is
  // sum_j exp(s_j - m) v_j / (sum_j exp(s_j - m) + exp(sink - m)). nullptr: none.
  const float* sinks = nullptr;
  // K and V each in its own type (kQ8_0 / kQ4_0: head_dim a multiple of 32); the scales only for a kInt8 side.
  KvDType k_type = KvDType::kF32;
  KvDType v_type = KvDType::kF32;
  const uint8_t* k = nullptr;  // slot 0's row of this KV head
  const uint8_t* v = nullptr;
  int64_t k_row_bytes = 0;  // bytes from one slot's row to the next (the cache's whole row, every KV head)
  int64_t v_row_bytes = 0;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int64_t scale_stride = 0;  // floats from one slot's scale to the next (the cache's num_kv_heads)
};

// The first position a query with `num_ctx` positions of context sees under AttentionArgs::window.
inline int32_t window_begin(int32_t num_ctx, int32_t window) {
  return window > 0 && num_ctx > window ? num_ctx - window : 0;
}

// Flash-style: one pass over the context in tiles, a running max and sum per query head, the output
// rescaled when the max grows; no score row of the whole context, no gather of K/V into a copy.
using AttentionFn = void (*)(const AttentionArgs& args);

}  // namespace pagoda::kernels
