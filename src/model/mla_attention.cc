// DeepSeek-V2's multi-head latent attention (LlamaModel::mla_attention_block), as llama.cpp's deepseek2 graph computes
// it with the absorbed projections: the query heads from attn_q or the q LoRA; each token's latent (RMS-normed) and
// shared rope key from attn_kv_a_mqa, rotated and stored as the cache's one K row; each query head's nope part taken
// into the latent space by its attn_k_b beside its rotated rope part, so that the attention is grouped-query attention
// over one KV head whose V is the front of K (KvShape::v_in_k); each head's latent output taken to its values by its
// attn_v_b, then attn_output and the residual add. Touches only K rows of the cache.
#include <cstring>

#include "core/check.h"
#include "model/llama_model.h"
#include "quant/kv_int8.h"

namespace pagoda {

void LlamaModel::mla_attention_block(const BatchView& batch, const KvCacheView& kv, int32_t layer, Workspace& ws,
                                     ThreadPool& pool) const {
  const LayerWeights& lw = weights_.layers[size_t(layer)];
  const int32_t n = batch.num_tokens(), heads = config_.num_heads;
  const int32_t latent = config_.mla_kv_lora_rank, rope = config_.rope_dim, half_rope = rope / 2;
  const int32_t nope = config_.mla_nope_dim(), key = config_.mla_key_dim, value = config_.mla_value_dim;
  const int32_t row = config_.head_dim;  // latent + rope: a cache row, and a query head after absorption
  const int32_t q_dim = config_.q_dim();
  const int32_t kvl = config_.kv_layer(layer);
  const float eps = config_.rms_eps;
  PAGODA_CHECK(row == latent + rope && kv.kv_dim == row && kv.num_kv_heads == 1, "KV cache shaped for another model");

  pre_norm(lw.attn_norm, n, ws);
  // The query heads, [n][heads][nope then rope].
  if (config_.mla_q_lora_rank > 0) {
    const int32_t rank = config_.mla_q_lora_rank;
    linear(lw.mla_q_a, ws.xb.data(), ws.mla_q_a.data(), n, ws, pool);
    for (int32_t t = 0; t < n; ++t) {
      float* q_a = ws.mla_q_a.data() + int64_t(t) * rank;
      kernels_.rmsnorm(q_a, lw.mla_q_a_norm.data(), q_a, rank, eps);
    }
    linear(lw.mla_q_b, ws.mla_q_a.data(), ws.mla_q.data(), n, ws, pool);
  } else {
    linear(lw.wq, ws.xb.data(), ws.mla_q.data(), n, ws, pool);
  }
  // Each token's latent and rope key, [n][row] in ws.k: normed, rotated, stored; the queries' rope parts rotated into
  // the back of their absorbed heads.
  linear(lw.mla_kv_a, ws.xb.data(), ws.k.data(), n, ws, pool);
  for (int32_t t = 0; t < n; ++t) {
    const float* cs = ws.rope_cos.data() + size_t(t) * half_rope;
    const float* sn = ws.rope_sin.data() + size_t(t) * half_rope;
    float* k = ws.k.data() + int64_t(t) * row;
    kernels_.rmsnorm(k, lw.mla_kv_a_norm.data(), k, latent, eps);
    kernels_.rope(k + latent, k + latent, 1, rope, half_rope, cs, sn, config_.rope_neox);
    for (int32_t h = 0; h < heads; ++h)
      kernels_.rope(ws.mla_q.data() + (int64_t(t) * heads + h) * key + nope,
                    ws.q.data() + int64_t(t) * q_dim + int64_t(h) * row + latent, 1, rope, half_rope, cs, sn,
                    config_.rope_neox);
    const int64_t slot = batch.slot_ids[t];
    PAGODA_CHECK(slot >= 0 && slot < kv.num_slots, "slot {} outside the KV cache", slot);
    if (kv.k_dtype == KvDType::kInt8)
      kv.k_scale_at(kvl, slot)[0] = quantize_kv_int8(k, row, kv.k8_at(kvl, slot));
    else
      kernels_.quantize_kv_row(kv.k_dtype, k, row, kv.k_row(kvl, slot));
  }
  // Absorption: head h's nope part times its attn_k_b, into the front of its query row.
  for (int32_t h = 0; h < heads; ++h) {
    for (int32_t t = 0; t < n; ++t)
      std::memcpy(ws.mla_head_in.data() + int64_t(t) * nope, ws.mla_q.data() + (int64_t(t) * heads + h) * key,
                  sizeof(float) * size_t(nope));
    linear(lw.mla_k_b[size_t(h)], ws.mla_head_in.data(), ws.mla_head_out.data(), n, ws, pool);
    for (int32_t t = 0; t < n; ++t)
      std::memcpy(ws.q.data() + int64_t(t) * q_dim + int64_t(h) * row, ws.mla_head_out.data() + int64_t(t) * latent,
                  sizeof(float) * size_t(latent));
  }
  attention(batch, kv, layer, ws, pool);  // ws.xb: [n][heads][row], each head's weighted latent in front
  for (int32_t h = 0; h < heads; ++h) {
    for (int32_t t = 0; t < n; ++t)
      std::memcpy(ws.mla_head_in.data() + int64_t(t) * latent, ws.xb.data() + int64_t(t) * q_dim + int64_t(h) * row,
                  sizeof(float) * size_t(latent));
    linear(lw.mla_v_b[size_t(h)], ws.mla_head_in.data(), ws.mla_head_out.data(), n, ws, pool);
    for (int32_t t = 0; t < n; ++t)
      std::memcpy(ws.mla_values.data() + (int64_t(t) * heads + h) * value,
                  ws.mla_head_out.data() + int64_t(t) * value, sizeof(float) * size_t(value));
  }
  add_projection(lw.wo, ws.mla_values.data(), {}, false, lw.attn_post_norm, n, ws, pool);
}

}  // namespace pagoda
