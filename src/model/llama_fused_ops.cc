// LlamaModel's fused forward ops (ModelOptions::fusion): RMSNorm writes the Q8_0 blocks the quantized matmuls
// read in the same pass (the K-quants' q8_K blocks right after it); Q, K and V (a DeltaNet layer's input projections,
// gate and up) are one pool job over one quantized input; SiLU(gate)·up (or
// GELU's) is applied to each slice of rows right after the thread computed it (and quantized there for w_down); the
// output projections add into the residual stream from inside their job. Each op gives the bits of its unfused
// sequence: the kernels compute every output row and every token alone, rmsnorm_q8_0 writes the bytes of rmsnorm
// then quantize_row_q8_0, and the activation and the residual add are elementwise.
#include <algorithm>

#include "core/check.h"
#include "model/llama_model.h"

namespace pagoda {
namespace {

constexpr int64_t kQk = quant::BlockQ8_0::kNumValues;
constexpr int64_t kQkK = quant::kQK_K;

// Below this many tokens, normalizing (and quantizing) them on the calling thread is cheaper than a pool job.
constexpr int64_t kNormTokenGrain = 4;

}  // namespace

void LlamaModel::norm_rows(const std::vector<float>& weight, int32_t t_begin, int32_t t_end, bool to_f32, bool to_q8,
                           bool to_q8k, Workspace& ws) const {
  const int32_t dim = config_.dim;
  const int64_t num_blocks = dim / kQk;
  for (int32_t t = t_begin; t < t_end; ++t) {
    const float* x = ws.x.data() + int64_t(t) * dim;
    float* xb = ws.xb.data() + int64_t(t) * dim;
    quant::BlockQ8_0* xq = ws.xq.data() + t * num_blocks;
    if (to_f32 || to_q8k) {
      kernels_.rmsnorm(x, weight.data(), xb, dim, config_.rms_eps);
      if (to_q8) kernels_.quantize_row_q8_0(xb, xq, dim);
      if (to_q8k) kernels_.quantize_row_q8_K(xb, ws.xqk.data() + t * (dim / kQkK), dim);
    } else if (to_q8) {
      kernels_.rmsnorm_q8_0(x, weight.data(), xq, dim, config_.rms_eps);
    }
  }
}

void LlamaModel::matmul_rows(const WeightView& w, const float* x, QuantizedInput xq, float* y, int64_t o_begin,
                             int64_t o_end, int32_t t_begin, int32_t t_end) const {
  const MatmulKernels k = matmul_kernels(w.dtype);
  const int64_t rows = w.num_rows, cols = w.num_cols;
  if (k.q8_input != nullptr && xq.q8_0 != nullptr) {
    k.q8_input(w.row(o_begin), xq.q8_0 + t_begin * (cols / kQk), y + t_begin * rows + o_begin, o_end - o_begin, cols,
               t_end - t_begin, rows);
  } else if (k.q8k_input != nullptr && xq.q8_K != nullptr) {
    k.q8k_input(w.row(o_begin), xq.q8_K + t_begin * (cols / kQkK), y + t_begin * rows + o_begin, o_end - o_begin,
                cols, t_end - t_begin, rows);
  } else if (o_begin == 0 && o_end == rows) {
    k.f32_input(w.data, x + t_begin * cols, y + t_begin * rows, rows, cols, t_end - t_begin);
  } else {
    for (int32_t t = t_begin; t < t_end; ++t)
      k.f32_input(w.row(o_begin), x + t * cols, y + t * rows + o_begin, o_end - o_begin, cols, 1);
  }
}

void LlamaModel::qkv_fused(const LayerWeights& lw, int32_t n, Workspace& ws, ThreadPool& pool) const {
  const FusedProjection parts[] = {{&lw.wq, ws.q.data()}, {&lw.wk, ws.k.data()}, {&lw.wv, ws.v.data()}};
  norm_and_project(lw.attn_norm, parts, n, ws, pool);
}

void LlamaModel::norm_and_project(const std::vector<float>& norm, std::span<const FusedProjection> parts, int32_t n,
                                  Workspace& ws, ThreadPool& pool) const {
  bool any_f32 = false, any_q8 = false, any_q8k = false;  // which forms of the normed input some weight reads
  for (const FusedProjection& p : parts)
    (reads_q8(p.w->dtype) ? any_q8 : reads_q8_K(p.w->dtype) ? any_q8k : any_f32) = true;
  const float* xb = ws.xb.data();
  const QuantizedInput xq{ws.xq.data(), ws.xqk.data()};
  if (n == 1 || (!any_f32 && n <= Workspace::kMaxRowSplitTokens)) {
    // Row split: the inputs first (every thread reads every token), then one job over the weights' rows laid end
    // to end, so each thread streams one contiguous share of them (of Q, K and V).
    pool.parallel_for(n, kNormTokenGrain, [&](int64_t begin, int64_t end) {
      norm_rows(norm, int32_t(begin), int32_t(end), any_f32, any_q8, any_q8k, ws);
    });
    // The shares are cut by bytes, not rows: a V in a wider type than Q and K (Q4_K_M's Q6_K) would otherwise
    // leave the thread holding it last while the other waits.
    int64_t total_rows = 0, total_bytes = 0;
    for (const FusedProjection& p : parts) {
      total_rows += p.w->num_rows;
      total_bytes += p.w->num_rows * p.w->row_bytes();
    }
    // The first row (of the rows laid end to end; a weight's first, last or a multiple of kRowGrain into it) at or
    // past `bytes` into them.
    auto row_at = [&](int64_t bytes) {
      int64_t offset = 0;
      for (const FusedProjection& p : parts) {
        const int64_t part_bytes = p.w->num_rows * p.w->row_bytes();
        if (bytes < part_bytes) {
          const int64_t rows = (bytes + p.w->row_bytes() - 1) / p.w->row_bytes();
          return offset + std::min((rows + kRowGrain - 1) / kRowGrain * kRowGrain, p.w->num_rows);
        }
        bytes -= part_bytes;
        offset += p.w->num_rows;
      }
      return total_rows;
    };
    const int64_t num_threads = pool.num_threads();
    pool.run([&](int32_t thread_idx) {
      const int64_t begin = row_at(total_bytes * thread_idx / num_threads);
      const int64_t end = thread_idx + 1 == num_threads ? total_rows : row_at(total_bytes * (thread_idx + 1) / num_threads);
      int64_t offset = 0;
      for (const FusedProjection& p : parts) {
        const int64_t o_begin = std::max(begin, offset) - offset;
        const int64_t o_end = std::min(end, offset + p.w->num_rows) - offset;
        if (o_begin < o_end) matmul_rows(*p.w, xb, xq, p.y, o_begin, o_end, 0, n);
        offset += p.w->num_rows;
      }
    });
  } else {
    // Token split: a thread's tokens need no other thread's input, so their norm runs in the same job.
    pool.parallel_for(n, kTokenGrain, [&](int64_t begin, int64_t end) {
      norm_rows(norm, int32_t(begin), int32_t(end), any_f32, any_q8, any_q8k, ws);
      for (const FusedProjection& p : parts) matmul_rows(*p.w, xb, xq, p.y, 0, p.w->num_rows, int32_t(begin), int32_t(end));
    });
  }
}

void LlamaModel::gate_up_fused(const LayerWeights& lw, int32_t n, Workspace& ws, ThreadPool& pool) const {
  const int64_t hidden = config_.hidden_dim;
  PAGODA_CHECK(lw.w_gate.num_rows == hidden && lw.w_up.num_rows == hidden);
  bool any_f32 = false, any_q8 = false, any_q8k = false;
  for (const WeightView* w : {&lw.w_gate, &lw.w_up})
    (reads_q8(w->dtype) ? any_q8 : reads_q8_K(w->dtype) ? any_q8k : any_f32) = true;
  // Then hidden is whole blocks of w_down's form (the loader checked).
  const bool quantize_hidden = reads_q8(lw.w_down.dtype), quantize_hidden_k = reads_q8_K(lw.w_down.dtype);
  float* gate = ws.gate.data();
  float* up = ws.up.data();
  const float* xb = ws.xb.data();
  const QuantizedInput xq{ws.xq.data(), ws.xqk.data()};
  quant::BlockQ8_0* hq = ws.hq.data();
  quant::BlockQ8_K* hqk = ws.hqk.data();
  const int64_t hidden_blocks = hidden / kQk;
  // One token's slice [begin, end) of act(gate) * up into w_down's form.
  auto quantize_slice = [&](int64_t t, int64_t begin, int64_t end) {
    if (quantize_hidden)
      kernels_.quantize_row_q8_0(gate + t * hidden + begin, hq + t * hidden_blocks + begin / kQk, end - begin);
    if (quantize_hidden_k)
      kernels_.quantize_row_q8_K(gate + t * hidden + begin, hqk + t * (hidden / kQkK) + begin / kQkK, end - begin);
  };
  if (n == 1 || (!any_f32 && n <= Workspace::kMaxRowSplitTokens)) {
    pool.parallel_for(n, kNormTokenGrain, [&](int64_t begin, int64_t end) {
      norm_rows(lw.ffn_norm, int32_t(begin), int32_t(end), any_f32, any_q8, any_q8k, ws);
    });
    // Gate and up split the same rows, so a thread holds both halves of its slice and finishes it at once; a
    // slice of whole Q8_0 (q8_K) blocks can be quantized for w_down right there too.
    const int64_t grain = quantize_hidden_k ? kQkK : quantize_hidden ? kQk : kRowGrain;
    pool.parallel_for(hidden, grain, [&](int64_t begin, int64_t end) {
      matmul_rows(lw.w_gate, xb, xq, gate, begin, end, 0, n);
      matmul_rows(lw.w_up, xb, xq, up, begin, end, 0, n);
      for (int64_t t = 0; t < n; ++t) {
        activation_mul(gate + t * hidden + begin, up + t * hidden + begin, end - begin);
        quantize_slice(t, begin, end);
      }
    });
  } else {
    pool.parallel_for(n, kTokenGrain, [&](int64_t begin, int64_t end) {
      const int32_t t_begin = int32_t(begin), t_end = int32_t(end);
      norm_rows(lw.ffn_norm, t_begin, t_end, any_f32, any_q8, any_q8k, ws);
      matmul_rows(lw.w_gate, xb, xq, gate, 0, hidden, t_begin, t_end);
      matmul_rows(lw.w_up, xb, xq, up, 0, hidden, t_begin, t_end);
      activation_mul(gate + begin * hidden, up + begin * hidden, (end - begin) * hidden);
      for (int64_t t = begin; t < end; ++t) quantize_slice(t, 0, hidden);
    });
  }
}

void LlamaModel::linear_add_fused(const WeightView& w, const float* h, QuantizedInput hq, int32_t n, Workspace& ws,
                                  ThreadPool& pool) const {
  const int64_t rows = w.num_rows, cols = w.num_cols;
  PAGODA_CHECK(rows == config_.dim, "a residual projection writes dim = {} rows, this one {}", config_.dim, rows);
  const bool q8_0 = reads_q8(w.dtype), q8_K = reads_q8_K(w.dtype), q8 = q8_0 || q8_K;
  // Into ws.xq or ws.xqk, whose normed input is spent by now.
  const bool quantize_h = (q8_0 && hq.q8_0 == nullptr) || (q8_K && hq.q8_K == nullptr);
  if (quantize_h) hq = {ws.xq.data(), ws.xqk.data()};
  auto quantize_tokens = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      if (q8_0) kernels_.quantize_row_q8_0(h + t * cols, ws.xq.data() + t * (cols / kQk), cols);
      if (q8_K) kernels_.quantize_row_q8_K(h + t * cols, ws.xqk.data() + t * (cols / kQkK), cols);
    }
  };
  float* x = ws.x.data();
  float* proj = ws.proj.data();  // f32 [n, dim]: each thread's slice of W h, added into x while still in cache
  if (n == 1 || (q8 && n <= Workspace::kMaxRowSplitTokens)) {
    if (quantize_h) pool.parallel_for(n, kNormTokenGrain, quantize_tokens);
    pool.parallel_for(rows, kRowGrain, [&](int64_t begin, int64_t end) {
      matmul_rows(w, h, hq, proj, begin, end, 0, n);
      for (int64_t t = 0; t < n; ++t) kernels_.axpy(1.0f, proj + t * rows + begin, x + t * rows + begin, end - begin);
    });
  } else {
    pool.parallel_for(n, kTokenGrain, [&](int64_t begin, int64_t end) {
      if (quantize_h) quantize_tokens(begin, end);
      matmul_rows(w, h, hq, proj, 0, rows, int32_t(begin), int32_t(end));
      kernels_.axpy(1.0f, proj + begin * rows, x + begin * rows, (end - begin) * rows);
    });
  }
}

}  // namespace pagoda
