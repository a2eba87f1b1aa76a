// The streamed set is one 7B layer's seven matrices (q, k, v, o: 4096 x 4096; gate, up: 11008 x 4096; down:
// 4096 x 11008) repeated until the set passes the byte floor. Quantizing a gigabyte of random weights would take
// minutes, so one 128-row tile per column count is quantized and repacked, and every matrix is that tile's bytes
// over and over (whole row groups, so the copies are a valid matrix of the layout); the kernels' speed does not
// depend on the values.
#include "bench/gemv_stream_bench.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>

#include "bench/memory_bandwidth.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "model/weight_repack.h"
#include "quant/block_iq4_mxfp4.h"
#include "quant/block_kquants.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"
#include "quant/block_q8_K.h"
#include "quant/iq4_quantize.h"
#include "quant/kquant_quantize.h"

namespace pagoda::bench {
namespace {

constexpr int64_t kGemvTileRows = 128;
constexpr int64_t kGemvRowGrain = 16;  // as LlamaModel's
constexpr int64_t kGemvDim = 4096, kGemvHidden = 11008;
constexpr int64_t kGemvCachedRows = 64;
constexpr double kGemvCachedSeconds = 0.2;

struct GemvShape {
  int64_t rows, cols;
};
constexpr GemvShape kGemvLayer[] = {{kGemvDim, kGemvDim},   {kGemvDim, kGemvDim},    {kGemvDim, kGemvDim},
                                    {kGemvDim, kGemvDim},   {kGemvHidden, kGemvDim}, {kGemvHidden, kGemvDim},
                                    {kGemvDim, kGemvHidden}};

double gemv_seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A 2 MiB-aligned buffer advised onto huge pages, as the loader's repacked weights are.
struct GemvHugeBuffer {
  uint8_t* data = nullptr;
  size_t bytes = 0;
  explicit GemvHugeBuffer(size_t n) : bytes((n + (size_t(2) << 20) - 1) / (size_t(2) << 20) * (size_t(2) << 20)) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    PAGODA_CHECK(p != MAP_FAILED, "gemv bench: cannot map {} bytes", bytes);
    (void)::madvise(p, bytes, MADV_HUGEPAGE);
    data = static_cast<uint8_t*>(p);
  }
  GemvHugeBuffer(const GemvHugeBuffer&) = delete;
  GemvHugeBuffer& operator=(const GemvHugeBuffer&) = delete;
  ~GemvHugeBuffer() { ::munmap(data, bytes); }
};

// w: f32 [rows, cols] -> the file bytes of `dtype`.
std::vector<uint8_t> encode_gemv_tile(DType dtype, const std::vector<float>& w, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(size_t(rows * dtype_row_bytes(dtype, cols)));
  void* y = out.data();
  switch (dtype) {
    case DType::kQ2_K:
      quant::quantize_rows_q2_K(w.data(), static_cast<quant::BlockQ2_K*>(y), rows, cols, nullptr);
      break;
    case DType::kQ3_K:
      quant::quantize_rows_q3_K(w.data(), static_cast<quant::BlockQ3_K*>(y), rows, cols, nullptr);
      break;
    case DType::kQ4_K:
      quant::quantize_rows_q4_K(w.data(), static_cast<quant::BlockQ4_K*>(y), rows, cols, nullptr);
      break;
    case DType::kQ5_K:
      quant::quantize_rows_q5_K(w.data(), static_cast<quant::BlockQ5_K*>(y), rows, cols, nullptr);
      break;
    case DType::kQ6_K:
      quant::quantize_rows_q6_K(w.data(), static_cast<quant::BlockQ6_K*>(y), rows, cols, nullptr);
      break;
    case DType::kIQ4_NL:
      quant::quantize_rows_iq4_nl(w.data(), static_cast<quant::BlockIQ4_NL*>(y), rows, cols, nullptr);
      break;
    case DType::kIQ4_XS:
      quant::quantize_rows_iq4_xs(w.data(), static_cast<quant::BlockIQ4_XS*>(y), rows, cols, nullptr);
      break;
    case DType::kQ4_0: quant::quantize_row_q4_0(w.data(), static_cast<quant::BlockQ4_0*>(y), rows * cols); break;
    case DType::kQ8_0: quant::quantize_row_q8_0(w.data(), static_cast<quant::BlockQ8_0*>(y), rows * cols); break;
    default: PAGODA_CHECK(false, "gemv bench: no encoder for {}", dtype_name(dtype));
  }
  return out;
}

// One token's activations, quantized once as decode's fused ops do, and the kernel entry that reads them.
struct GemvActivations {
  std::vector<quant::BlockQ8_0> q8_0;
  std::vector<quant::BlockQ8_K> q8_K;
};

// y[rows] = W x for rows [begin, end) of a matrix in `layout`.
void gemv_row_range(const kernels::KernelTable& k, DType layout, const uint8_t* w, int64_t rows, int64_t cols,
                    const float* x, const GemvActivations& xq, float* y, int64_t begin, int64_t end) {
  const kernels::MatmulKernels& m = k.matmul_for(layout);
  const uint8_t* wb = w + begin * dtype_row_bytes(layout, cols);
  if (m.q8_K != nullptr)
    m.q8_K(wb, xq.q8_K.data(), y + begin, end - begin, cols, 1, rows);
  else if (m.q8_0 != nullptr)
    m.q8_0(wb, xq.q8_0.data(), y + begin, end - begin, cols, 1, rows);
  else
    m.f32(wb, x, y + begin, end - begin, cols, 1);
}

GemvActivations quantize_gemv_input(const kernels::KernelTable& k, const std::vector<float>& x, int64_t cols) {
  GemvActivations a;
  a.q8_0.resize(size_t(cols / 32));
  k.quantize_row_q8_0(x.data(), a.q8_0.data(), cols);
  if (cols % quant::kQK_K == 0) {
    a.q8_K.resize(size_t(cols / quant::kQK_K));
    k.quantize_row_q8_K(x.data(), a.q8_K.data(), cols);
  }
  return a;
}

// The kernel table's layout of a tile of `dtype`, repacked where it prefers another.
std::vector<uint8_t> gemv_tile_in_layout(const kernels::KernelTable& k, DType dtype, DType layout,
                                         const std::vector<float>& w, int64_t cols) {
  const std::vector<uint8_t> file = encode_gemv_tile(dtype, w, kGemvTileRows, cols);
  if (layout == dtype) return file;
  std::vector<uint8_t> out(size_t(layout_bytes(layout, kGemvTileRows, cols)));
  repack_matrix(dtype, layout, file.data(), out.data(), kGemvTileRows, cols);
  return out;
}

}  // namespace

bool gemv_stream_supports(DType dtype) {
  switch (dtype) {
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
    case DType::kQ4_0:
    case DType::kQ8_0: return true;
    default: return false;
  }
}

double estimate_clock_ghz() {
#if defined(__x86_64__)
  constexpr int64_t kIters = 50'000'000;  // 4 dependent adds each: 0.2e9 cycles
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    uint64_t v = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < kIters; ++i) asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(v));
    best = std::min(best, gemv_seconds_since(t0));
  }
  return 4.0 * double(kIters) / best / 1e9;
#else
  return 0.0;
#endif
}

std::vector<GemvStreamFigure> run_gemv_stream_bench(const kernels::KernelTable& k, const GemvStreamOptions& o) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(kGemvTileRows * kGemvHidden)), x_dim(static_cast<size_t>(kGemvDim)),
      x_hidden(static_cast<size_t>(kGemvHidden));
  for (float& v : w) v = normal(rng);
  for (float& v : x_dim) v = normal(rng);
  for (float& v : x_hidden) v = normal(rng);
  const GemvActivations xq_dim = quantize_gemv_input(k, x_dim, kGemvDim),
                        xq_hidden = quantize_gemv_input(k, x_hidden, kGemvHidden);
  const double clock_ghz = estimate_clock_ghz();
  std::vector<double> read_gbps;
  for (int32_t n : o.thread_counts) read_gbps.push_back(o.read_gbps ? *o.read_gbps : read_bandwidth_gbps(n));

  std::vector<GemvStreamFigure> figures;
  std::vector<float> y(static_cast<size_t>(kGemvHidden));
  for (DType dtype : o.types) {
    PAGODA_CHECK(gemv_stream_supports(dtype), "gemv bench: {} is not supported", dtype_name(dtype));
    // Both column counts' tiles, in the layout each shape gets (the same for all of them, whole groups of 16).
    const DType layout = preferred_layout(k, dtype, kGemvDim, kGemvDim);
    PAGODA_CHECK(preferred_layout(k, dtype, kGemvHidden, kGemvDim) == layout &&
                     preferred_layout(k, dtype, kGemvDim, kGemvHidden) == layout,
                 "gemv bench: the 7B shapes of {} take different layouts", dtype_name(dtype));
    const std::vector<uint8_t> tile_dim = gemv_tile_in_layout(k, dtype, layout, w, kGemvDim);
    const std::vector<uint8_t> tile_hidden = gemv_tile_in_layout(k, dtype, layout, w, kGemvHidden);

    int64_t layer_bytes = 0, layer_weights = 0;
    for (const GemvShape& s : kGemvLayer) {
      layer_bytes += layout_bytes(layout, s.rows, s.cols);
      layer_weights += s.rows * s.cols;
    }
    const int64_t num_layers = (o.min_stream_bytes + layer_bytes - 1) / layer_bytes;
    GemvHugeBuffer set(size_t(num_layers * layer_bytes));
    struct Matrix {
      const uint8_t* w;
      GemvShape shape;
    };
    std::vector<Matrix> matrices;
    uint8_t* at = set.data;
    for (int64_t l = 0; l < num_layers; ++l) {
      for (const GemvShape& s : kGemvLayer) {
        const std::vector<uint8_t>& tile = s.cols == kGemvDim ? tile_dim : tile_hidden;
        PAGODA_CHECK(int64_t(tile.size()) * (s.rows / kGemvTileRows) == layout_bytes(layout, s.rows, s.cols));
        for (int64_t r = 0; r < s.rows; r += kGemvTileRows, at += tile.size())
          std::memcpy(at, tile.data(), tile.size());
        matrices.push_back({at - layout_bytes(layout, s.rows, s.cols), s});
      }
    }

    for (size_t ti = 0; ti < o.thread_counts.size(); ++ti) {
      ThreadPool pool(o.thread_counts[ti]);
      auto pass = [&] {
        for (const Matrix& m : matrices) {
          const float* x = m.shape.cols == kGemvDim ? x_dim.data() : x_hidden.data();
          const GemvActivations& xq = m.shape.cols == kGemvDim ? xq_dim : xq_hidden;
          pool.parallel_for(m.shape.rows, kGemvRowGrain, [&](int64_t b, int64_t e) {
            gemv_row_range(k, layout, m.w, m.shape.rows, m.shape.cols, x, xq, y.data(), b, e);
          });
        }
      };
      pass();  // warm-up: page faults, the pool's threads
      double best = 1e30;
      for (int32_t rep = 0; rep < o.num_reps; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        pass();
        best = std::min(best, gemv_seconds_since(t0));
      }

      // Cached: each thread its own 64 rows of the 4096-column tile, over and over in one job.
      const int64_t cached_bytes = layout_bytes(layout, kGemvCachedRows, kGemvDim);
      const int32_t n = pool.num_threads();
      std::vector<std::vector<uint8_t>> own(size_t(n),
                                            std::vector<uint8_t>(tile_dim.begin(), tile_dim.begin() + cached_bytes));
      std::vector<std::vector<float>> own_y(static_cast<size_t>(n),
                                            std::vector<float>(static_cast<size_t>(kGemvCachedRows)));
      int64_t iters = 16;
      double cached_seconds = 0.0;
      for (;;) {
        const auto t0 = std::chrono::steady_clock::now();
        pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t)
            for (int64_t i = 0; i < iters; ++i)
              gemv_row_range(k, layout, own[size_t(t)].data(), kGemvCachedRows, kGemvDim, x_dim.data(), xq_dim,
                             own_y[size_t(t)].data(), 0, kGemvCachedRows);
        });
        cached_seconds = gemv_seconds_since(t0);
        if (cached_seconds >= kGemvCachedSeconds) break;
        iters *= 2;
      }

      GemvStreamFigure f;
      f.dtype = dtype;
      f.layout = layout;
      f.num_threads = n;
      f.stream_bytes = num_layers * layer_bytes;
      f.stream_weights = num_layers * layer_weights;
      f.stream_gbps = double(f.stream_bytes) / best / 1e9;
      f.cached_gbps = double(cached_bytes) * double(iters) * n / cached_seconds / 1e9;
      f.read_gbps = read_gbps[ti];
      f.clock_ghz = clock_ghz;
      if (clock_ghz > 0.0) {
        f.stream_weights_per_cycle = double(f.stream_weights) / best / (clock_ghz * 1e9) / n;
        f.cached_weights_per_cycle =
            double(kGemvCachedRows * kGemvDim) * double(iters) / cached_seconds / (clock_ghz * 1e9);
      }
      figures.push_back(f);
    }
  }
  return figures;
}

}  // namespace pagoda::bench
