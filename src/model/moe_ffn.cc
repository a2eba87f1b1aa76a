// LlamaModel's mixture-of-experts FFN (Mixtral, Qwen2-MoE, Qwen3-MoE, gpt-oss, DeepSeek-V2): the router's softmax
// picks each token's top-k experts (llama.cpp's build_moe_ffn: weights renormalized to sum 1 when the family asks,
// then scaled; gpt-oss: the top-k logits, after the router's bias, softmaxed among themselves; DeepSeek: sigmoids,
// chosen with a selection bias and by expert group, weighted unbiased), the step's
// tokens are grouped by expert, and each chosen expert runs once over all of its tokens, so its weights are read once
// per step whatever the batch. Each token's normed row is quantized once into the form the experts' kernels read
// (Q8_0 blocks, the K-quants' q8_K super-blocks, or f32 rows kept as they are). Two pool jobs per layer: gate and up of
// every chosen expert (their rows laid end to end, the activation applied and quantized for w_down by the thread that
// computed each slice), then down of every chosen expert; each token's outputs are then summed in its top-k order. A
// layer with a shared expert runs it over every token in two more jobs (the same split) and adds its output, times
// sigmoid(x . gate) when gated (Qwen2-MoE), to that sum; the sum is then added to the residual stream. An expert's
// biases (gpt-oss) are added to its gate, up and down rows as each slice is computed, after its output scale (Gemma 4's
// per-expert scale). Gemma 4 runs its dense FFN beside the experts instead of a shared expert: each branch on its own
// pre-norm, the router on a scaled plain RMSNorm of the residual, the branches' outputs post-normed, summed and
// post-normed again, as llama.cpp's gemma4 graph orders it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "model/llama_model.h"

namespace pagoda {
namespace {

constexpr int64_t kQk = quant::BlockQ8_0::kNumValues;
constexpr int64_t kQkK = quant::kQK_K;

}  // namespace

void LlamaModel::route_tokens(const std::vector<float>& selection_bias, int32_t n, Workspace& ws) const {
  const int32_t num_experts = config_.num_experts, k = config_.num_experts_used;
  const bool biased = !selection_bias.empty() || config_.expert_groups > 1;
  float probs[ModelConfigLimits::kMaxExperts], selection[ModelConfigLimits::kMaxExperts];
  int32_t order[ModelConfigLimits::kMaxExperts];
  for (int32_t t = 0; t < n; ++t) {
    const float* logits = ws.router_logits.data() + int64_t(t) * num_experts;
    // gpt-oss ranks the logits themselves and softmaxes the chosen k below; DeepSeek's sigmoid router ranks each
    // expert's sigmoid; the others rank the softmax of all.
    if (config_.expert_softmax_after_topk) {
      std::memcpy(probs, logits, sizeof(float) * size_t(num_experts));
    } else if (config_.expert_gating_sigmoid) {
      for (int32_t e = 0; e < num_experts; ++e) probs[e] = 1.0f / (1.0f + std::exp(-logits[e]));
    } else {
      kernels_.softmax(logits, probs, num_experts);
    }
    // What the experts are chosen by: the probabilities, or with DeepSeek's selection bias added and, under
    // group-limited routing, the groups outside the best expert_groups_used (each scored by its two best) masked.
    const float* rank = probs;
    if (biased) {
      for (int32_t e = 0; e < num_experts; ++e)
        selection[e] = probs[e] + (selection_bias.empty() ? 0.0f : selection_bias[size_t(e)]);
      if (config_.expert_groups > 1) mask_expert_groups(selection);
      rank = selection;
    }
    // Top-k, highest first (ties: the lower expert id first).
    for (int32_t e = 0; e < num_experts; ++e) order[e] = e;
    std::partial_sort(order, order + k, order + num_experts,
                      [&](int32_t a, int32_t b) { return rank[a] > rank[b] || (rank[a] == rank[b] && a < b); });
    int32_t* choice = ws.moe_choice.data() + int64_t(t) * k;
    float* weight = ws.moe_weight.data() + int64_t(t) * k;
    float chosen_sum = 0.0f;
    for (int32_t j = 0; j < k; ++j) {
      choice[j] = order[j];
      weight[j] = probs[order[j]];
    }
    if (config_.expert_softmax_after_topk) kernels_.softmax(weight, weight, k);
    for (int32_t j = 0; j < k; ++j) chosen_sum += weight[j];
    if (config_.expert_weights_norm) {
      const float denominator = std::max(chosen_sum, 6.103515625e-5f);  // llama.cpp's clamp (f16's smallest normal)
      for (int32_t j = 0; j < k; ++j) weight[j] /= denominator;
    }
    if (config_.expert_weights_scale != 0.0f && config_.expert_weights_scale != 1.0f)
      for (int32_t j = 0; j < k; ++j) weight[j] *= config_.expert_weights_scale;
  }
  // Group the assignments by expert: a counting sort, tokens in order within an expert.
  int32_t* offset = ws.moe_offset.data();
  std::fill(offset, offset + num_experts + 1, 0);
  for (int64_t a = 0; a < int64_t(n) * k; ++a) ++offset[ws.moe_choice[size_t(a)] + 1];
  ws.moe_num_active = 0;
  int32_t cursor[ModelConfigLimits::kMaxExperts];
  for (int32_t e = 0; e < num_experts; ++e) {
    if (offset[e + 1] > 0) ws.moe_active[size_t(ws.moe_num_active++)] = e;
    offset[e + 1] += offset[e];
    cursor[e] = offset[e];
  }
  for (int32_t t = 0; t < n; ++t)
    for (int32_t j = 0; j < k; ++j) {
      const int32_t r = cursor[ws.moe_choice[size_t(t) * k + j]]++;
      ws.moe_row[size_t(t) * k + j] = r;
      ws.moe_token[size_t(r)] = t;
    }
}

void LlamaModel::mask_expert_groups(float* selection) const {
  const int32_t groups = config_.expert_groups, per_group = config_.num_experts / groups;
  float score[ModelConfigLimits::kMaxExperts];
  int32_t order[ModelConfigLimits::kMaxExperts];
  for (int32_t g = 0; g < groups; ++g) {
    const float* v = selection + g * per_group;
    float best = v[0] > v[1] ? v[0] : v[1], second = v[0] > v[1] ? v[1] : v[0];
    for (int32_t i = 2; i < per_group; ++i) {
      if (v[i] > best) {
        second = best;
        best = v[i];
      } else if (v[i] > second) {
        second = v[i];
      }
    }
    score[g] = best + second;
    order[g] = g;
  }
  std::partial_sort(order, order + config_.expert_groups_used, order + groups,
                    [&](int32_t a, int32_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); });
  bool kept[ModelConfigLimits::kMaxExperts] = {};
  for (int32_t j = 0; j < config_.expert_groups_used; ++j) kept[order[j]] = true;
  for (int32_t g = 0; g < groups; ++g)
    if (!kept[g])
      for (int32_t i = 0; i < per_group; ++i) selection[g * per_group + i] = -INFINITY;
}

void LlamaModel::moe_ffn(const LayerWeights& lw, int32_t n, Workspace& ws, ThreadPool& pool) const {
  const int32_t dim = config_.dim, k = config_.num_experts_used;
  const int64_t hidden = config_.expert_hidden_dim;
  PAGODA_CHECK(int64_t(ws.moe_x.size()) >= int64_t(n) * k * dim, "workspace sized for another model");
  if (config_.moe_beside_dense_ffn) {
    dense_branch_and_router_input(lw, n, ws, pool);
    linear(lw.router, ws.xb.data(), ws.router_logits.data(), n, ws, pool);
    pre_norm(lw.ffn_pre_norm_2, n, ws);
  } else {
    pre_norm(lw.ffn_norm, n, ws);
    linear(lw.router, ws.xb.data(), ws.router_logits.data(), n, ws, pool);
  }
  if (!lw.router_bias.empty())
    for (int32_t t = 0; t < n; ++t)
      kernels_.axpy(1.0f, lw.router_bias.data(), ws.router_logits.data() + int64_t(t) * config_.num_experts,
                    config_.num_experts);
  route_tokens(lw.expert_selection_bias, n, ws);

  // Every expert of a layer is a slice of one stacked tensor: one dtype, one layout. Each matrix reads its input in
  // the form its kernel takes: Q8_0 blocks, q8_K super-blocks (the K-quants) or f32 rows.
  const ExpertWeights& first = lw.experts.front();
  const bool shared = lw.shared_expert.w_gate.data != nullptr;
  const bool gate_up_q8 = reads_q8(first.w_gate.dtype) || reads_q8(first.w_up.dtype);
  const bool gate_up_q8k = reads_q8_K(first.w_gate.dtype) || reads_q8_K(first.w_up.dtype);
  const bool shared_q8 = shared && (reads_q8(lw.shared_expert.w_gate.dtype) || reads_q8(lw.shared_expert.w_up.dtype));
  const bool shared_q8k =
      shared && (reads_q8_K(lw.shared_expert.w_gate.dtype) || reads_q8_K(lw.shared_expert.w_up.dtype));
  const bool gate_up_f32 = !reads_quantized(first.w_gate.dtype) || !reads_quantized(first.w_up.dtype);
  const bool down_q8 = reads_q8(first.w_down.dtype), down_q8k = reads_q8_K(first.w_down.dtype);
  const int64_t num_rows = int64_t(n) * k;
  const int64_t dim_blocks = dim / kQk, hidden_blocks = hidden / kQk;
  const int64_t dim_blocks_k = dim / kQkK, hidden_blocks_k = hidden / kQkK;
  PAGODA_CHECK(!(gate_up_q8k || shared_q8k) || dim % kQkK == 0,
               "a K-quant expert's gate and up need whole super-blocks");
  PAGODA_CHECK(!down_q8 || hidden % kQk == 0, "a quantized expert's w_down needs whole blocks");
  PAGODA_CHECK(!down_q8k || hidden % kQkK == 0, "a K-quant expert's w_down needs whole super-blocks");
  // Each grouped row's input: the token's normed row (and its Q8_0 blocks or q8_K super-blocks, quantized once per
  // token; the shared expert reads them in place).
  if (gate_up_q8 || shared_q8 || gate_up_q8k || shared_q8k)
    pool.parallel_for(n, 4, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        if (gate_up_q8 || shared_q8)
          kernels_.quantize_row_q8_0(ws.xb.data() + t * dim, ws.xq.data() + t * dim_blocks, dim);
        if (gate_up_q8k || shared_q8k)
          kernels_.quantize_row_q8_K(ws.xb.data() + t * dim, ws.xqk.data() + t * dim_blocks_k, dim);
      }
    });
  for (int64_t r = 0; r < num_rows; ++r) {
    const int64_t t = ws.moe_token[size_t(r)];
    if (gate_up_f32) std::memcpy(ws.moe_x.data() + r * dim, ws.xb.data() + t * dim, sizeof(float) * size_t(dim));
    if (gate_up_q8)
      std::memcpy(ws.moe_xq.data() + r * dim_blocks, ws.xq.data() + t * dim_blocks,
                  sizeof(quant::BlockQ8_0) * size_t(dim_blocks));
    if (gate_up_q8k)
      std::memcpy(ws.moe_xqk.data() + r * dim_blocks_k, ws.xqk.data() + t * dim_blocks_k,
                  sizeof(quant::BlockQ8_K) * size_t(dim_blocks_k));
  }

  // Gate and up of every chosen expert, their rows laid end to end; a thread's slice never crosses a Q8_0 block
  // (q8_K super-block) of the hidden row (the grain), so it can quantize its own slice for w_down.
  const int32_t num_active = ws.moe_num_active;
  const int64_t grain = down_q8k ? kQkK : down_q8 ? kQk : kRowGrain;
  pool.parallel_for(int64_t(num_active) * hidden, grain, [&](int64_t begin, int64_t end) {
    for (int32_t a = int32_t(begin / hidden); a < num_active && int64_t(a) * hidden < end; ++a) {
      const int32_t e = ws.moe_active[size_t(a)];
      const ExpertWeights& ex = lw.experts[size_t(e)];
      const int64_t o_begin = std::max(begin - a * hidden, int64_t(0)), o_end = std::min(end - a * hidden, hidden);
      const int32_t r0 = ws.moe_offset[size_t(e)], count = ws.moe_offset[size_t(e) + 1] - r0;
      float* gate = ws.moe_gate.data() + int64_t(r0) * hidden;
      float* up = ws.moe_up.data() + int64_t(r0) * hidden;
      const float* x = ws.moe_x.data() + int64_t(r0) * dim;
      const QuantizedInput xq{gate_up_q8 ? ws.moe_xq.data() + int64_t(r0) * dim_blocks : nullptr,
                              gate_up_q8k ? ws.moe_xqk.data() + int64_t(r0) * dim_blocks_k : nullptr};
      matmul_rows(ex.w_gate, x, xq, gate, o_begin, o_end, 0, count);
      matmul_rows(ex.w_up, x, xq, up, o_begin, o_end, 0, count);
      for (int64_t r = 0; r < count; ++r) {
        if (!lw.expert_gate_bias.empty())
          kernels_.axpy(1.0f, lw.expert_gate_bias.data() + e * hidden + o_begin, gate + r * hidden + o_begin,
                        o_end - o_begin);
        if (!lw.expert_up_bias.empty())
          kernels_.axpy(1.0f, lw.expert_up_bias.data() + e * hidden + o_begin, up + r * hidden + o_begin,
                        o_end - o_begin);
        activation_mul(gate + r * hidden + o_begin, up + r * hidden + o_begin, o_end - o_begin);
        if (down_q8)
          kernels_.quantize_row_q8_0(gate + r * hidden + o_begin,
                                     ws.moe_hq.data() + (int64_t(r0) + r) * hidden_blocks + o_begin / kQk,
                                     o_end - o_begin);
        if (down_q8k)
          kernels_.quantize_row_q8_K(gate + r * hidden + o_begin,
                                     ws.moe_hqk.data() + (int64_t(r0) + r) * hidden_blocks_k + o_begin / kQkK,
                                     o_end - o_begin);
      }
    }
  });
  // Down of every chosen expert, the same way over dim rows each.
  pool.parallel_for(int64_t(num_active) * dim, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int32_t a = int32_t(begin / dim); a < num_active && int64_t(a) * dim < end; ++a) {
      const int32_t e = ws.moe_active[size_t(a)];
      const int64_t o_begin = std::max(begin - int64_t(a) * dim, int64_t(0));
      const int64_t o_end = std::min(end - int64_t(a) * dim, int64_t(dim));
      const int32_t r0 = ws.moe_offset[size_t(e)], count = ws.moe_offset[size_t(e) + 1] - r0;
      const QuantizedInput hq{down_q8 ? ws.moe_hq.data() + int64_t(r0) * hidden_blocks : nullptr,
                              down_q8k ? ws.moe_hqk.data() + int64_t(r0) * hidden_blocks_k : nullptr};
      matmul_rows(lw.experts[size_t(e)].w_down, ws.moe_gate.data() + int64_t(r0) * hidden, hq,
                  ws.moe_out.data() + int64_t(r0) * dim, o_begin, o_end, 0, count);
      if (!lw.expert_down_scale.empty())
        for (int32_t r = 0; r < count; ++r) {
          float* out = ws.moe_out.data() + (int64_t(r0) + r) * dim;
          const float s = lw.expert_down_scale[size_t(e)];
          for (int64_t i = o_begin; i < o_end; ++i) out[i] *= s;
        }
      if (!lw.expert_down_bias.empty())
        for (int32_t r = 0; r < count; ++r)
          kernels_.axpy(1.0f, lw.expert_down_bias.data() + int64_t(e) * dim + o_begin,
                        ws.moe_out.data() + (int64_t(r0) + r) * dim + o_begin, o_end - o_begin);
    }
  });
  if (shared) shared_expert_ffn(lw.shared_expert, n, ws, pool);  // into ws.proj
  // Each token's weighted outputs summed in its top-k order, plus the shared expert's, then added to the residual
  // (llama.cpp's order). The sum takes the token's normed row in ws.xb, read last by the shared expert's gate.
  pool.parallel_for(n, 4, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* sum = ws.xb.data() + t * dim;
      float shared_scale = 1.0f;
      if (!lw.shared_expert_gate.empty())
        shared_scale = 1.0f / (1.0f + std::exp(-kernels_.dot(sum, lw.shared_expert_gate.data(), dim)));
      for (int32_t j = 0; j < k; ++j) {
        const float* out = ws.moe_out.data() + int64_t(ws.moe_row[size_t(t * k + j)]) * dim;
        const float w = ws.moe_weight[size_t(t * k + j)];
        if (j == 0) {
          for (int32_t i = 0; i < dim; ++i) sum[i] = w * out[i];
        } else {
          kernels_.axpy(w, out, sum, dim);
        }
      }
      if (shared) kernels_.axpy(shared_scale, ws.proj.data() + t * dim, sum, dim);
      if (config_.moe_beside_dense_ffn) {
        kernels_.rmsnorm(sum, lw.ffn_post_norm_2.data(), sum, dim, config_.rms_eps);
        kernels_.axpy(1.0f, ws.moe_dense_out.data() + t * dim, sum, dim);
        kernels_.rmsnorm(sum, lw.ffn_post_norm.data(), sum, dim, config_.rms_eps);
      }
      kernels_.axpy(1.0f, sum, ws.x.data() + t * dim, dim);
    }
  });
}

void LlamaModel::dense_branch_and_router_input(const LayerWeights& lw, int32_t n, Workspace& ws,
                                               ThreadPool& pool) const {
  const int32_t dim = config_.dim;
  const int64_t hidden = lw.w_gate.num_rows;
  PAGODA_CHECK(int64_t(ws.moe_dense_out.size()) >= int64_t(n) * dim && int64_t(ws.gate.size()) >= n * hidden,
               "workspace sized for another model");
  pre_norm(lw.ffn_norm, n, ws);
  linear(lw.w_gate, ws.xb.data(), ws.gate.data(), n, ws, pool);
  linear(lw.w_up, ws.xb.data(), ws.up.data(), n, ws, pool);
  activation_mul(ws.gate.data(), ws.up.data(), int64_t(n) * hidden);
  linear(lw.w_down, ws.gate.data(), ws.moe_dense_out.data(), n, ws, pool);
  const float inv_sqrt_dim = 1.0f / std::sqrt(float(dim));
  for (int32_t t = 0; t < n; ++t) {
    float* dense = ws.moe_dense_out.data() + int64_t(t) * dim;
    kernels_.rmsnorm(dense, lw.ffn_post_norm_1.data(), dense, dim, config_.rms_eps);
    float* in = ws.xb.data() + int64_t(t) * dim;
    kernels_.rmsnorm(ws.x.data() + int64_t(t) * dim, unit_weights_.data(), in, dim, config_.rms_eps);
    for (int32_t i = 0; i < dim; ++i) in[i] = in[i] * inv_sqrt_dim * lw.router_input_scale[size_t(i)];
  }
}

void LlamaModel::shared_expert_ffn(const ExpertWeights& ex, int32_t n, Workspace& ws, ThreadPool& pool) const {
  const int32_t dim = config_.dim;
  const int64_t hidden = config_.shared_expert_hidden_dim;
  const int64_t hidden_blocks = hidden / kQk, hidden_blocks_k = hidden / kQkK;
  const bool down_q8 = reads_q8(ex.w_down.dtype), down_q8k = reads_q8_K(ex.w_down.dtype);
  PAGODA_CHECK(!down_q8 || hidden % kQk == 0, "a quantized shared expert's w_down needs whole blocks");
  PAGODA_CHECK(!down_q8k || hidden % kQkK == 0, "a K-quant shared expert's w_down needs whole super-blocks");
  PAGODA_CHECK(int64_t(ws.gate.size()) >= int64_t(n) * hidden, "workspace sized for another model");
  // Gate and up over every token, split by rows (a slice never crosses a Q8_0 block or q8_K super-block of the
  // hidden row when w_down reads them quantized), each thread applying the activation to its slice and quantizing it.
  const QuantizedInput xq{ws.xq.data(), ws.xqk.data()};
  const int64_t grain = down_q8k ? kQkK : down_q8 ? kQk : kRowGrain;
  pool.parallel_for(hidden, grain, [&](int64_t o_begin, int64_t o_end) {
    matmul_rows(ex.w_gate, ws.xb.data(), xq, ws.gate.data(), o_begin, o_end, 0, n);
    matmul_rows(ex.w_up, ws.xb.data(), xq, ws.up.data(), o_begin, o_end, 0, n);
    for (int64_t t = 0; t < n; ++t) {
      float* gate = ws.gate.data() + t * hidden + o_begin;
      activation_mul(gate, ws.up.data() + t * hidden + o_begin, o_end - o_begin);
      if (down_q8) kernels_.quantize_row_q8_0(gate, ws.hq.data() + t * hidden_blocks + o_begin / kQk, o_end - o_begin);
      if (down_q8k)
        kernels_.quantize_row_q8_K(gate, ws.hqk.data() + t * hidden_blocks_k + o_begin / kQkK, o_end - o_begin);
    }
  });
  const QuantizedInput hq{ws.hq.data(), ws.hqk.data()};
  pool.parallel_for(dim, kRowGrain, [&](int64_t o_begin, int64_t o_end) {
    matmul_rows(ex.w_down, ws.gate.data(), hq, ws.proj.data(), o_begin, o_end, 0, n);
  });
}

}  // namespace pagoda
