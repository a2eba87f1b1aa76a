// Qwen3.5's and Qwen3-Next's gated DeltaNet block (LlamaModel::delta_net_block), as llama.cpp's qwen35 and qwen3next
// graphs compute it: the projections of the normed input (Qwen3-Next's beta and alpha from one fused matrix), each
// sequence's causal convolution from its window and SiLU, L2-normed Q and K, the recurrence per value head
// (kernels.h's gated_delta_net, or its chunked form over a prefill's tokens) from the head's matrix in the sequence's
// state slot, the gated RMSNorm and the output projection with its residual add. Touches no K/V: its state is the
// slot's.
#include <cmath>
#include <span>

#include "core/check.h"
#include "model/llama_model.h"

namespace pagoda {
namespace {

// A sequence's tokens of one step from which the recurrence runs in chunks (kernels.h's gated_delta_net_chunked):
// fewer, a decode step's one among them, take the token-by-token step.
constexpr int32_t kChunkedFromTokens = 8;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float silu(float x) { return x / (1.0f + std::exp(-x)); }
// ggml's softplus: linear above 20.
float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

// x / sqrt(sum(x^2) + eps), in ggml's steps: an RMSNorm with eps / n, then times 1 / sqrt(n).
void l2_norm(float* x, int32_t n, float eps) {
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
  const float mean = float(sum / n);
  const float scale = 1.0f / std::sqrt(mean + eps / float(n));
  const float unit = 1.0f / std::sqrt(float(n));
  for (int32_t i = 0; i < n; ++i) x[i] = x[i] * scale * unit;
}

}  // namespace

void LlamaModel::delta_net_block(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                                 ThreadPool& pool) const {
  const LayerWeights& lw = weights_.layers[size_t(layer)];
  const ModelConfig& c = config_;
  const int32_t n = batch.num_tokens();
  const int32_t head_dim = c.delta_net_head_dim, k_heads = c.delta_net_k_heads, v_heads = c.delta_net_v_heads;
  const int64_t conv_dim = c.delta_net_conv_dim(), key_dim = c.delta_net_key_dim(), value_dim = c.delta_net_value_dim();
  // The input projections: fused, one pool job over one normed (and quantized) input; else the pre-norm, then each.
  const bool fuse = fuses(lw);
  const FusedProjection qkv{&lw.dn_qkv, ws.dn_qkv.data()}, z{&lw.dn_z, ws.dn_z.data()};
  const FusedProjection grouped[] = {qkv, z, {&lw.dn_beta_alpha, ws.dn_beta_alpha.data()}};
  const FusedProjection separate[] = {qkv, z, {&lw.dn_beta, ws.dn_beta.data()}, {&lw.dn_alpha, ws.dn_g.data()}};
  const std::span<const FusedProjection> parts =
      c.delta_net_grouped_v_heads ? std::span<const FusedProjection>(grouped) : std::span<const FusedProjection>(separate);
  if (fuse) {
    norm_and_project(lw.attn_norm, parts, n, ws, pool);
  } else {
    pre_norm(lw.attn_norm, n, ws);
    for (const FusedProjection& p : parts) linear(*p.w, ws.xb.data(), p.y, n, ws, pool);
  }
  const int32_t v_per_k = v_heads / k_heads;
  if (c.delta_net_grouped_v_heads) {
    // ssm_ba's row of a token: per key head g, beta of its value heads g * v_per_k + r, then their alpha.
    for (int32_t t = 0; t < n; ++t) {
      const float* ba = ws.dn_beta_alpha.data() + int64_t(t) * 2 * v_heads;
      float* beta = ws.dn_beta.data() + int64_t(t) * v_heads;
      float* alpha = ws.dn_g.data() + int64_t(t) * v_heads;
      for (int32_t g = 0; g < k_heads; ++g)
        for (int32_t r = 0; r < v_per_k; ++r) {
          beta[g * v_per_k + r] = ba[2 * g * v_per_k + r];
          alpha[g * v_per_k + r] = ba[2 * g * v_per_k + v_per_k + r];
        }
    }
  }
  for (int32_t t = 0; t < n; ++t) {
    float* beta = ws.dn_beta.data() + int64_t(t) * v_heads;
    float* g = ws.dn_g.data() + int64_t(t) * v_heads;
    for (int32_t h = 0; h < v_heads; ++h) {
      beta[h] = sigmoid(beta[h]);
      g[h] = softplus(g[h] + lw.dn_dt_bias[size_t(h)]) * lw.dn_a[size_t(h)];
    }
  }
  const int64_t state_offset = int64_t(c.conv_layers_before(layer)) * c.conv_state_floats();
  // The convolution over each sequence's tokens from its window, then SiLU and the L2 norms, per token.
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    const int32_t begin = batch.seq_starts[s], len = batch.seq_starts[s + 1] - begin;
    if (len == 0) continue;
    float* window = kv.state.slot(batch.state_slots[s]) + state_offset;
    float* rows = ws.dn_qkv.data() + int64_t(begin) * conv_dim;
    kernels_.short_conv(lw.conv_taps.data(), window, rows, rows, conv_dim, c.delta_net_conv_kernel, len);
  }
  pool.parallel_for(n, 1, [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) {
      float* row = ws.dn_qkv.data() + t * conv_dim;
      for (int64_t i = 0; i < conv_dim; ++i) row[i] = silu(row[i]);
      for (int32_t h = 0; h < 2 * k_heads; ++h) l2_norm(row + int64_t(h) * head_dim, head_dim, c.rms_eps);
    }
  });
  // The recurrence, one (sequence, value head) at a time: value head h reads key head h % k_heads, or h / v_per_k
  // where the value heads are grouped by key head.
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const int64_t matrix_floats = int64_t(head_dim) * head_dim;
  pool.parallel_for(int64_t(batch.num_seqs()) * v_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int32_t s = int32_t(item / v_heads), h = int32_t(item % v_heads);
      const int32_t hk = c.delta_net_grouped_v_heads ? h / v_per_k : h % k_heads;
      const int32_t first = batch.seq_starts[s], len = batch.seq_starts[s + 1] - first;
      if (len == 0) continue;
      float* matrix =
          kv.state.slot(batch.state_slots[s]) + state_offset + c.delta_net_window_floats() + int64_t(h) * matrix_floats;
      const float* row = ws.dn_qkv.data() + int64_t(first) * conv_dim;
      const auto recurrence = len >= kChunkedFromTokens ? kernels_.gated_delta_net_chunked : kernels_.gated_delta_net;
      recurrence(matrix, row + int64_t(hk) * head_dim, row + key_dim + int64_t(hk) * head_dim,
                 row + 2 * key_dim + int64_t(h) * head_dim, conv_dim, ws.dn_g.data() + int64_t(first) * v_heads + h,
                 ws.dn_beta.data() + int64_t(first) * v_heads + h, v_heads,
                 ws.dn_out.data() + int64_t(first) * value_dim + int64_t(h) * head_dim, value_dim, head_dim, len,
                 scale);
    }
  });
  // Gated RMSNorm per head: rmsnorm(out, ssm_norm) * silu(z).
  pool.parallel_for(n, 1, [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) {
      float* out = ws.dn_out.data() + t * value_dim;
      const float* z = ws.dn_z.data() + t * value_dim;
      for (int32_t h = 0; h < v_heads; ++h)
        kernels_.rmsnorm(out + int64_t(h) * head_dim, lw.dn_norm.data(), out + int64_t(h) * head_dim, head_dim,
                         c.rms_eps);
      for (int64_t i = 0; i < value_dim; ++i) out[i] *= silu(z[i]);
    }
  });
  add_projection(lw.dn_out, ws.dn_out.data(), {}, fuse, lw.attn_post_norm, n, ws, pool);
}

}  // namespace pagoda
