// AttentionArgs: one work item of paged attention, a plain value of pointers and sizes: the query heads that
// share one KV head (grouped-query attention), for num_queries consecutive query tokens of one sequence (causal:
// the last sees context positions 0..num_ctx-1, query i of them 0..num_ctx-num_queries+i), whose K/V rows are found
// through the sequence's block table. Each query's result is the bits it would get as a work item of its own. Position
// j lives in slot blocks[j / block_size] * block_size + j % block_size; slot s's K row (head_dim values of k_type)
// starts at k + s * k_row_bytes, its V row at v + s * v_row_bytes; a kInt8 side's scale of slot s is at
// k_scale[s * scale_stride] (v_scale likewise). An item may also hold several consecutive KV heads of the cache row
// (num_kv_heads), each with its own num_q_heads query heads: a decoded token's share of a thread, whose rows a kernel
// can then read in address order.
#pragma once

#include <cstdint>

#include "core/types.h"

namespace pagoda::kernels {

struct AttentionArgs {
  const float* q = nullptr;  // query i's heads at q + i * q_stride: [num_q_heads][head_dim], one after another
  float* out = nullptr;      // the same shape at out + i * q_stride; written, never read before
  int32_t num_q_heads = 1;  // per KV head
  // Consecutive KV heads of one cache row (> 1: a kernel may walk their rows together, position by position). KV head
  // g of them: its query heads at q + g * num_q_heads * head_dim (out likewise), its K row at
  // k + g * kv_row_bytes(k_type, head_dim) (V likewise), its int8 scales at k_scale + g (v_scale likewise), its sinks
  // at sinks + g * num_q_heads. Each head gets the bits it would get as an item of its own.
  int32_t num_kv_heads = 1;
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

// KV head g of an item of several (AttentionArgs::num_kv_heads) as the item of one KV head it stands for. A template
// of the calling level only to keep each level's copy apart (each is compiled with its own instruction set).
template <class Level>
inline AttentionArgs one_kv_head(const AttentionArgs& a, int32_t g) {
  AttentionArgs one = a;
  const int64_t q_offset = int64_t(g) * a.num_q_heads * a.head_dim;
  one.q = a.q + q_offset;
  one.out = a.out + q_offset;
  one.num_kv_heads = 1;
  one.k = a.k + g * kv_row_bytes(a.k_type, a.head_dim);
  one.v = a.v + g * kv_row_bytes(a.v_type, a.head_dim);
  if (a.k_scale != nullptr) one.k_scale = a.k_scale + g;
  if (a.v_scale != nullptr) one.v_scale = a.v_scale + g;
  if (a.sinks != nullptr) one.sinks = a.sinks + int64_t(g) * a.num_q_heads;
  return one;
}

// f(item of KV head g) for each KV head of an item, for the kernels that take one KV head at a time.
template <class Level, class F>
inline void for_each_kv_head(const AttentionArgs& a, F&& f) {
  for (int32_t g = 0; g < a.num_kv_heads; ++g) f(one_kv_head<Level>(a, g));
}

// Flash-style: one pass over the context in tiles, a running max and sum per query head, the output
// rescaled when the max grows; no score row of the whole context, no gather of K/V into a copy.
using AttentionFn = void (*)(const AttentionArgs& args);

}  // namespace pagoda::kernels
