// run_gemv_stream_bench: one figure per (type, thread count), in order, over whole 7B layers of the layout the kernel
// table prefers, every rate positive; the types it cannot encode are refused up front. Speed is not asserted.
#include <gtest/gtest.h>

#include "bench/gemv_stream_bench.h"
#include "model/weight_repack.h"

namespace pagoda::bench {
namespace {

TEST(GemvStreamBench, FiguresCoverEachTypeAndThreadCountOverWholeLayers) {
  const kernels::KernelTable& k = kernels::best_kernels();
  GemvStreamOptions o;
  o.types = {DType::kIQ4_XS, DType::kQ6_K};
  o.thread_counts = {1, 2};
  o.min_stream_bytes = 1;
  o.num_reps = 1;
  o.read_gbps = 30.0;
  const std::vector<GemvStreamFigure> figures = run_gemv_stream_bench(k, o);
  ASSERT_EQ(figures.size(), 4u);
  for (size_t i = 0; i < figures.size(); ++i) {
    const GemvStreamFigure& f = figures[i];
    EXPECT_EQ(f.dtype, o.types[i / 2]);
    EXPECT_EQ(f.num_threads, o.thread_counts[i % 2]);
    EXPECT_EQ(f.layout, preferred_layout(k, f.dtype, 4096, 4096));
    const int64_t layer_weights = 4 * 4096 * 4096 + 3 * 11008 * 4096;
    EXPECT_EQ(f.stream_weights, layer_weights);  // one layer passes a 1-byte floor
    // The bytes of the layout streamed (IQ4_XSx8 keeps its scales unpacked: more than the file's).
    EXPECT_EQ(f.stream_bytes, 4 * layout_bytes(f.layout, 4096, 4096) + 2 * layout_bytes(f.layout, 11008, 4096) +
                                  layout_bytes(f.layout, 4096, 11008));
    EXPECT_GT(f.stream_gbps, 0.0);
    EXPECT_GT(f.cached_gbps, 0.0);
    EXPECT_EQ(f.read_gbps, 30.0);
  }
}

TEST(GemvStreamBench, SupportsTheQuantizedTypesItCanEncode) {
  for (DType d : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS,
                  DType::kQ4_0, DType::kQ8_0})
    EXPECT_TRUE(gemv_stream_supports(d)) << dtype_name(d);
  for (DType d : {DType::kF32, DType::kF16, DType::kQ4_Kx8, DType::kMXFP4}) EXPECT_FALSE(gemv_stream_supports(d));
}

}  // namespace
}  // namespace pagoda::bench
