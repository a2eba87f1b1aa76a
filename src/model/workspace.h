// Workspace: every activation buffer one forward step needs, sized once at start-up for the largest step
// (max_tokens rows, max_context positions), so the hot path allocates nothing. Owned by the caller (the engine),
// one per concurrent forward; the model only borrows it.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "quant/block_q8_0.h"

namespace pagoda {

struct Workspace {
  // max_hidden_rows: BatchView::hidden_rows a step may ask for (0: none).
  Workspace(const ModelConfig& config, int32_t max_tokens, int32_t max_context, int32_t max_logits_rows,
            int32_t num_threads = 1, int32_t max_hidden_rows = 0);

  int32_t max_tokens;
  int32_t max_context;
  int32_t max_logits_rows;
  int32_t max_hidden_rows;
  int32_t num_threads;          // threads that may share this workspace in one forward call
  std::vector<float> x;         // f32 [max_tokens, dim]: the residual stream
  std::vector<float> xb;        // f32 [max_tokens, max(dim, q_dim)]: normed input / attention output
  std::vector<float> q;         // f32 [max_tokens, q_dim]
  std::vector<float> k;         // f32 [max_tokens, kv_dim]
  std::vector<float> v;         // f32 [max_tokens, kv_dim]
  std::vector<float> proj;      // f32 [max_tokens, dim]: output of wo / w_down before the residual add
  std::vector<float> gate;      // f32 [max_tokens, hidden]
  std::vector<float> up;        // f32 [max_tokens, hidden]
  std::vector<float> scores;    // f32 [num_threads, max_context]: attention scores of one head per thread
  std::vector<float> rope_cos;  // f32 [max_tokens, rope_dim / 2]
  std::vector<float> rope_sin;  // f32 [max_tokens, rope_dim / 2]
  std::vector<float> final_x;   // f32 [max_logits_rows, dim]
  std::vector<float> logits;    // f32 [max_logits_rows, vocab]
  std::vector<float> hidden;    // f32 [max_hidden_rows, dim]: BatchView::hidden_rows after the final norm
  // Q8_0 [max_tokens, max(dim, hidden) / 32]: activations quantized once for the quantized matmuls, so the
  // threads can split a matmul's rows instead of its tokens (small batches), and so one quantization (fused with
  // RMSNorm) serves Q, K and V, or gate and up.
  std::vector<quant::BlockQ8_0> xq;
  // Q8_0 [max_tokens, hidden / 32]: silu(gate) * up quantized for a quantized w_down, by the fused gate/up job
  // while xq still holds its input.
  std::vector<quant::BlockQ8_0> hq;
  // The same for INT8 weights: int8 [min(max_tokens, kMaxRowSplitTokens), max(dim, hidden)] values and their
  // f32 [min(max_tokens, kMaxRowSplitTokens)] per-token scales.
  std::vector<int8_t> xq_int8;
  std::vector<float> xq_int8_scales;
  // f32 [max(max_tokens, max_logits_rows), max(dim, hidden)]: a linear layer's input times its AWQ input scale.
  std::vector<float> x_scaled;
  // Tensor parallel only, sized on first use on every rank: f32 [rows, vocab] of every rank's logit columns, rank
  // after rank, as the group's first rank receives them before putting each row in order.
  std::vector<float> logits_gather;
  static constexpr int32_t kMaxRowSplitTokens = 64;
};

}  // namespace pagoda
