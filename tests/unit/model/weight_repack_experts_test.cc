// repack_weights on a mixture-of-experts layer, at every SIMD level: the router, each expert's matrices and the shared
// expert's take the level's preferred layout (an expert's gate and up one group size, as moe_ffn.cc splits their rows
// together), and each repacked matrix multiplies as its file layout does.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/model_weights.h"
#include "model/weight_repack.h"
#include "quant/block_q4_0.h"
#include "support/simd_levels.h"

namespace pagoda {
namespace {

// A Q4_0 matrix of random values and its view.
struct Q4Matrix {
  std::vector<quant::BlockQ4_0> blocks;
  WeightView view;
  Q4Matrix(int64_t rows, int64_t cols, std::mt19937& rng) : blocks(size_t(rows * cols / 32)) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> values(size_t(rows * cols));
    for (float& v : values) v = dist(rng);
    quant::quantize_row_q4_0(values.data(), blocks.data(), rows * cols);
    view = {DType::kQ4_0, blocks.data(), rows, cols};
  }
};

// y = W x for one token through the table's f32 entry point of the view's dtype.
std::vector<float> product(const kernels::KernelTable& table, const WeightView& w, const std::vector<float>& x) {
  std::vector<float> y(size_t(w.num_rows));
  table.matmul_for(w.dtype).f32(w.data, x.data(), y.data(), w.num_rows, w.num_cols, 1);
  return y;
}

class WeightRepackExpertsTest : public kernels::SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(WeightRepackExpertsTest);

TEST_P(WeightRepackExpertsTest, TheRouterAndEveryExpertTakeTheLevelsLayout) {
  constexpr int64_t kDim = 128, kHidden = 64, kExperts = 16, kSharedHidden = 96;
  std::mt19937 rng(5);
  std::vector<Q4Matrix> matrices;
  matrices.reserve(size_t(1 + 3 * kExperts + 3));
  ModelWeights weights;
  weights.layers.resize(1);
  LayerWeights& lw = weights.layers[0];
  lw.router = matrices.emplace_back(kExperts, kDim, rng).view;
  for (int64_t e = 0; e < kExperts; ++e) {
    ExpertWeights ex;
    ex.w_gate = matrices.emplace_back(kHidden, kDim, rng).view;
    ex.w_up = matrices.emplace_back(kHidden, kDim, rng).view;
    ex.w_down = matrices.emplace_back(kDim, kHidden, rng).view;
    lw.experts.push_back(ex);
  }
  lw.shared_expert.w_gate = matrices.emplace_back(kSharedHidden, kDim, rng).view;
  lw.shared_expert.w_up = matrices.emplace_back(kSharedHidden, kDim, rng).view;
  lw.shared_expert.w_down = matrices.emplace_back(kDim, kSharedHidden, rng).view;
  const LayerWeights before = lw;
  const DType layout = preferred_layout(*simd_, DType::kQ4_0, kHidden, kDim);
  ASSERT_NE(layout, DType::kQ4_0) << "the level keeps Q4_0 as it is: nothing to check";

  EXPECT_EQ(repack_weights(*simd_, weights, false), 1 + 3 * kExperts + 3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x_dim(kDim), x_hidden(kHidden);
  for (float& v : x_dim) v = dist(rng);
  for (float& v : x_hidden) v = dist(rng);
  auto expect_same_product = [&](const WeightView& repacked, const WeightView& plain, const std::vector<float>& x) {
    const std::vector<float> a = product(*simd_, repacked, x), b = product(*simd_, plain, x);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1.0f + std::fabs(b[i]))) << "row " << i;
  };
  EXPECT_EQ(lw.router.dtype, preferred_layout(*simd_, DType::kQ4_0, kExperts, kDim));
  expect_same_product(lw.router, before.router, x_dim);
  for (int64_t e = 0; e < kExperts; ++e) {
    const ExpertWeights& ex = lw.experts[size_t(e)];
    const ExpertWeights& plain = before.experts[size_t(e)];
    SCOPED_TRACE(testing::Message() << "expert " << e);
    EXPECT_EQ(ex.w_gate.dtype, layout);
    EXPECT_EQ(ex.w_up.dtype, layout);
    EXPECT_EQ(ex.w_down.dtype, preferred_layout(*simd_, DType::kQ4_0, kDim, kHidden));
    expect_same_product(ex.w_gate, plain.w_gate, x_dim);
    expect_same_product(ex.w_up, plain.w_up, x_dim);
    expect_same_product(ex.w_down, plain.w_down, x_hidden);
  }
  const ExpertWeights& shared = lw.shared_expert;
  const DType shared_layout = preferred_layout(*simd_, DType::kQ4_0, kSharedHidden, kDim);
  EXPECT_EQ(shared.w_gate.dtype, shared_layout);
  EXPECT_EQ(shared.w_up.dtype, shared_layout);
  EXPECT_EQ(shared.w_down.dtype, preferred_layout(*simd_, DType::kQ4_0, kDim, kSharedHidden));
  std::vector<float> x_shared(kSharedHidden);
  for (float& v : x_shared) v = dist(rng);
  expect_same_product(shared.w_gate, before.shared_expert.w_gate, x_dim);
  expect_same_product(shared.w_up, before.shared_expert.w_up, x_dim);
  expect_same_product(shared.w_down, before.shared_expert.w_down, x_shared);
}

}  // namespace
}  // namespace pagoda
