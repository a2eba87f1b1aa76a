// The kernel half of `pagoda bench isa`: random weights per dtype, repacked per level as the loader would, timed
// through the same row or token split as LlamaModel::linear.
#include "bench/isa_kernel_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "core/check.h"
#include "core/half.h"
#include "kernels/attention_args.h"
#include "model/weight_repack.h"
#include "quant/block_awq_int4.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"
#include "quant/kv_int8.h"
#include "quant/kv_row.h"
#include "quant/row_int8.h"

namespace pagoda::bench {
namespace {

using kernels::Isa;
using kernels::KernelTable;

constexpr int64_t kRowGrain = 16;           // as LlamaModel's
constexpr int64_t kMaxRowSplitTokens = 64;  // as Workspace's

std::vector<float> random_floats(std::mt19937& rng, int64_t n, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// w: f32 [rows, cols] -> the bytes of `dtype`.
std::vector<uint8_t> encode(DType dtype, const std::vector<float>& w, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(size_t(rows * dtype_row_bytes(dtype, cols)));
  switch (dtype) {
    case DType::kQ4_0:
      quant::quantize_row_q4_0(w.data(), reinterpret_cast<quant::BlockQ4_0*>(out.data()), rows * cols);
      break;
    case DType::kQ8_0:
      quant::quantize_row_q8_0(w.data(), reinterpret_cast<quant::BlockQ8_0*>(out.data()), rows * cols);
      break;
    case DType::kInt8:
      for (int64_t r = 0; r < rows; ++r)
        quant::quantize_row_int8(w.data() + r * cols, out.data() + r * dtype_row_bytes(dtype, cols), cols);
      break;
    case DType::kAwqInt4G128:
      for (int64_t r = 0; r < rows; ++r)
        quant::quantize_row_awq_int4(w.data() + r * cols, out.data() + r * dtype_row_bytes(dtype, cols), cols, 128);
      break;
    case DType::kF16:
    case DType::kBF16: {
      auto* h = reinterpret_cast<uint16_t*>(out.data());
      for (size_t i = 0; i < w.size(); ++i) h[i] = dtype == DType::kF16 ? float_to_fp16(w[i]) : float_to_bf16(w[i]);
      break;
    }
    default: PAGODA_CHECK(false, "isa bench: no encoder for {}", dtype_name(dtype));
  }
  return out;
}

// Seconds per call of each level's run(level), the best of rounds that each call every level once (so that a burst
// of load elsewhere slows all levels of a round alike, not one level's whole measurement): at least 5 rounds and
// min_seconds in all.
template <class Fn>
std::vector<double> best_seconds_interleaved(size_t num_levels, double min_seconds, Fn&& run) {
  std::vector<double> best(num_levels, 1e30);
  for (size_t l = 0; l < num_levels; ++l) run(l);  // warm-up: caches, page faults, the pool's threads
  double total = 0.0;
  for (int round = 0; round < 5 || (total < min_seconds && round < 1000); ++round) {
    for (size_t l = 0; l < num_levels; ++l) {
      const auto start = std::chrono::steady_clock::now();
      run(l);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best[l] = std::min(best[l], s);
      total += s;
    }
  }
  return best;
}

// y = W x for num_tokens rows, split as LlamaModel::linear splits it.
void linear(ThreadPool& pool, const KernelTable& k, DType layout, const uint8_t* w, int64_t rows, int64_t cols,
            const float* x, int64_t num_tokens, float* y) {
  const kernels::MatmulKernels& m = k.matmul_for(layout);
  const int64_t row_bytes = dtype_row_bytes(layout, cols);
  if (num_tokens == 1) {
    pool.parallel_for(rows, kRowGrain,
                      [&](int64_t b, int64_t e) { m.f32(w + b * row_bytes, x, y + b, e - b, cols, 1); });
  } else if (m.int8 != nullptr && num_tokens <= kMaxRowSplitTokens) {
    std::vector<int8_t> xq(static_cast<size_t>(num_tokens * cols));  // (a page or two: no measurable cost)
    std::vector<float> xs(static_cast<size_t>(num_tokens));
    for (int64_t t = 0; t < num_tokens; ++t)
      xs[size_t(t)] = k.quantize_row_int8(x + t * cols, xq.data() + t * cols, cols);
    pool.parallel_for(rows, kRowGrain, [&](int64_t b, int64_t e) {
      m.int8(w + b * row_bytes, xq.data(), xs.data(), y + b, e - b, cols, num_tokens, rows);
    });
  } else if (m.q8_0 != nullptr && num_tokens <= kMaxRowSplitTokens) {
    const int64_t blocks = cols / 32;
    std::vector<quant::BlockQ8_0> xq(static_cast<size_t>(num_tokens * blocks));
    for (int64_t t = 0; t < num_tokens; ++t) k.quantize_row_q8_0(x + t * cols, xq.data() + t * blocks, cols);
    pool.parallel_for(rows, kRowGrain, [&](int64_t b, int64_t e) {
      m.q8_0(w + b * row_bytes, xq.data(), y + b, e - b, cols, num_tokens, rows);
    });
  } else if (m.q8_K != nullptr && num_tokens <= kMaxRowSplitTokens) {
    const int64_t blocks = cols / quant::kQK_K;
    std::vector<quant::BlockQ8_K> xq(static_cast<size_t>(num_tokens * blocks));
    for (int64_t t = 0; t < num_tokens; ++t) k.quantize_row_q8_K(x + t * cols, xq.data() + t * blocks, cols);
    pool.parallel_for(rows, kRowGrain, [&](int64_t b, int64_t e) {
      m.q8_K(w + b * row_bytes, xq.data(), y + b, e - b, cols, num_tokens, rows);
    });
  } else {
    pool.parallel_for(num_tokens, 4,
                      [&](int64_t b, int64_t e) { m.f32(w, x + b * cols, y + b * rows, rows, cols, e - b); });
  }
}

}  // namespace

std::vector<IsaKernelFigure> run_isa_kernel_bench(ThreadPool& pool, const std::vector<Isa>& levels,
                                                  const IsaKernelBenchOptions& o) {
  std::mt19937 rng(42);
  const int64_t rows = o.num_out, cols = o.num_in;
  const int32_t max_tokens = *std::max_element(o.token_counts.begin(), o.token_counts.end());
  const std::vector<float> wf = random_floats(rng, rows * cols, 1.0f);
  const std::vector<float> x = random_floats(rng, int64_t(max_tokens) * std::max(rows, cols), 2.0f);
  std::vector<float> y(size_t(int64_t(max_tokens) * std::max(rows, cols)));
  std::vector<IsaKernelFigure> figures;

  for (DType dtype : {DType::kQ4_0, DType::kQ8_0, DType::kInt8, DType::kAwqInt4G128, DType::kBF16, DType::kF16}) {
    const std::vector<uint8_t> file = encode(dtype, wf, rows, cols);
    std::vector<std::vector<uint8_t>> per_level;  // the matrix in each level's preferred layout
    std::vector<DType> layouts;
    for (Isa isa : levels) {
      const KernelTable& k = *kernels::kernels_for(isa);
      const DType layout = preferred_layout(k, dtype, rows, cols);
      layouts.push_back(layout);
      if (layout == dtype) {
        per_level.push_back(file);
      } else {
        per_level.emplace_back(size_t(layout_bytes(layout, rows, cols)));
        repack_matrix(dtype, layout, file.data(), per_level.back().data(), rows, cols);
      }
    }
    for (int32_t num_tokens : o.token_counts) {
      IsaKernelFigure f{std::string(dtype_name(dtype)) + " matmul x" + std::to_string(num_tokens), "GOP/s", {}};
      const std::vector<double> seconds =
          best_seconds_interleaved(levels.size(), o.min_seconds * double(levels.size()), [&](size_t l) {
            linear(pool, *kernels::kernels_for(levels[l]), layouts[l], per_level[l].data(), rows, cols, x.data(),
                   num_tokens, y.data());
          });
      for (double s : seconds) f.per_level.push_back(2.0 * double(rows) * double(cols) * num_tokens / s / 1e9);
      figures.push_back(std::move(f));
    }
  }

  // Vector ops over a prefill chunk of 128 rows of 2048 (one thread: they are split by rows in the model).
  const int64_t n_rows = 128, dim = cols;
  const std::vector<float> norm_weight = random_floats(rng, dim, 1.0f);
  std::vector<quant::BlockQ8_0> q8(size_t(n_rows * dim / 32));
  auto vector_op = [&](const char* name, auto&& call) {
    IsaKernelFigure f{name, "Mrow/s", {}};
    const std::vector<double> seconds = best_seconds_interleaved(levels.size(), o.min_seconds, [&](size_t l) {
      const KernelTable& k = *kernels::kernels_for(levels[l]);
      for (int64_t r = 0; r < n_rows; ++r) call(k, r);
    });
    for (double s : seconds) f.per_level.push_back(double(n_rows) / s / 1e6);
    figures.push_back(std::move(f));
  };
  vector_op("quantize q8_0 (2048)", [&](const KernelTable& k, int64_t r) {
    k.quantize_row_q8_0(x.data() + r * dim, q8.data() + r * dim / 32, dim);
  });
  vector_op("rmsnorm+q8_0 (2048)", [&](const KernelTable& k, int64_t r) {
    k.rmsnorm_q8_0(x.data() + r * dim, norm_weight.data(), q8.data() + r * dim / 32, dim, 1e-5f);
  });
  std::vector<float> gate(static_cast<size_t>(rows));
  vector_op("silu*up (5632)", [&](const KernelTable& k, int64_t r) {
    std::copy(x.begin() + r * 16, x.begin() + r * 16 + rows, gate.begin());
    k.silu_mul(gate.data(), x.data() + r * 16, rows);
  });

  // Softmax of an attention score row (the naive kernel's, 512 positions); RoPE of one token's query heads (32 of 64,
  // TinyLlama's), adjacent pairs and neox halves.
  std::vector<float> row(512);
  vector_op("softmax (512)", [&](const KernelTable& k, int64_t r) { k.softmax(x.data() + r * 16, row.data(), 512); });
  const std::vector<float> rope_cos = random_floats(rng, n_rows * 32, 1.0f),
                           rope_sin = random_floats(rng, n_rows * 32, 1.0f);
  std::vector<float> rotated(32 * 64);
  for (bool neox : {false, true})
    vector_op(neox ? "rope neox (32 x 64)" : "rope (32 x 64)", [&](const KernelTable& k, int64_t r) {
      k.rope(x.data() + r * 16, rotated.data(), 32, 64, 32, rope_cos.data() + r * 32, rope_sin.data() + r * 32, neox);
    });

  // Paged attention of one decode token (and of a prefill chunk of 64 tokens at the end of the context): 32 query
  // heads over 4 KV heads of 64, 512 positions, blocks of 16.
  const int32_t head_dim = 64, num_kv_heads = 4, group = 8, ctx = 512, block = 16;
  const int64_t kv_dim = int64_t(num_kv_heads) * head_dim;
  const std::vector<float> k_cache = random_floats(rng, ctx * kv_dim, 1.0f),
                           v_cache = random_floats(rng, ctx * kv_dim, 1.0f);
  // The caches in each KV type: rows of kv_dim values, int8 with a scale per row and head.
  struct TypedCache {
    KvDType type;
    int64_t row_bytes;
    std::vector<uint8_t> k, v;
    std::vector<float> k_scale, v_scale;
  };
  std::vector<TypedCache> caches;
  for (KvDType type : {KvDType::kF32, KvDType::kF16, KvDType::kQ8_0, KvDType::kQ4_0, KvDType::kInt8}) {
    TypedCache c{type, kv_row_bytes(type, kv_dim), {}, {}, {}, {}};
    c.k.resize(size_t(ctx * c.row_bytes));
    c.v.resize(c.k.size());
    for (int64_t slot = 0; slot < ctx; ++slot) {
      const float* k_row = k_cache.data() + slot * kv_dim;
      const float* v_row = v_cache.data() + slot * kv_dim;
      if (type != KvDType::kInt8) {
        quantize_kv_row(type, k_row, int32_t(kv_dim), c.k.data() + slot * c.row_bytes);
        quantize_kv_row(type, v_row, int32_t(kv_dim), c.v.data() + slot * c.row_bytes);
        continue;
      }
      for (int32_t h = 0; h < num_kv_heads; ++h) {
        auto* k8 = reinterpret_cast<int8_t*>(c.k.data() + slot * c.row_bytes) + h * head_dim;
        auto* v8 = reinterpret_cast<int8_t*>(c.v.data() + slot * c.row_bytes) + h * head_dim;
        c.k_scale.push_back(quantize_kv_int8(k_row + h * head_dim, head_dim, k8));
        c.v_scale.push_back(quantize_kv_int8(v_row + h * head_dim, head_dim, v8));
      }
    }
    caches.push_back(std::move(c));
  }
  std::vector<int32_t> blocks(static_cast<size_t>(ctx / block));
  for (size_t b = 0; b < blocks.size(); ++b) blocks[b] = int32_t(b);
  const int64_t q_stride = int64_t(group) * num_kv_heads * head_dim;
  constexpr int32_t kPrefillQueries = 64;
  const std::vector<float> q = random_floats(rng, kPrefillQueries * q_stride, 1.0f);
  std::vector<float> out(q.size());
  for (int32_t num_queries : {1, kPrefillQueries}) {
    for (const TypedCache& c : caches) {
      IsaKernelFigure f{
          std::string("attention ") + kv_dtype_name(c.type) + " KV " + (num_queries == 1 ? "(ctx 512)" : "x64 (512)"),
          "Ktok/s",
          {}};
      const std::vector<double> seconds = best_seconds_interleaved(levels.size(), o.min_seconds, [&](size_t l) {
        const KernelTable& k = *kernels::kernels_for(levels[l]);
        for (int32_t h = 0; h < num_kv_heads; ++h) {
          kernels::AttentionArgs a;
          a.q = q.data() + int64_t(h) * group * head_dim;
          a.out = out.data() + int64_t(h) * group * head_dim;
          a.num_q_heads = group;
          a.head_dim = head_dim;
          a.num_ctx = ctx;
          a.num_queries = num_queries;
          a.q_stride = q_stride;
          a.blocks = blocks.data();
          a.block_size = block;
          a.scale = 1.0f / std::sqrt(float(head_dim));
          a.k_type = a.v_type = c.type;
          a.k_row_bytes = a.v_row_bytes = c.row_bytes;
          a.k = c.k.data() + kv_row_bytes(c.type, int64_t(h) * head_dim);
          a.v = c.v.data() + kv_row_bytes(c.type, int64_t(h) * head_dim);
          if (c.type == KvDType::kInt8) {
            a.k_scale = c.k_scale.data() + h;
            a.v_scale = c.v_scale.data() + h;
            a.scale_stride = num_kv_heads;
          }
          k.paged_attention(a);
        }
      });
      for (double s : seconds) f.per_level.push_back(num_queries / s / 1e3);  // tokens (a layer's heads each) per call
      figures.push_back(std::move(f));
    }
  }
  return figures;
}

}  // namespace pagoda::bench
