// Every SIMD kernel against its scalar twin, on random data with odd sizes and tails.
#include "kernels/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "core/half.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/cpu_features.h"
#include "kernels/ref/ref_kernels.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

class KernelsTest : public SimdLevelTest {
 protected:
  std::vector<float> random_vector(size_t n, float scale = 1.0f) {
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }
  std::mt19937 rng_{1234};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(KernelsTest);

// |a - b| <= tol * (1 + |b|): sums of n products differ by rounding order only.
void expect_close(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol * (1.0f + std::fabs(b[i]))) << "at " << i;
}

// 1100: rows over 4 KiB (the avx512 float kernel copies such activations when it takes several tokens), with a tail.
const int64_t kSizes[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 172, 257, 1100};

TEST_P(KernelsTest, MatmulF32MatchesScalar) {
  for (int64_t num_in : kSizes) {
    for (int64_t num_out : {1, 5, 13, 16, 40}) {
      for (int64_t num_tokens : {1, 2, 3, 4, 5, 9, 17}) {
        auto w = random_vector(size_t(num_out * num_in));
        auto x = random_vector(size_t(num_tokens * num_in));
        std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size());
        ref::matmul_f32(w.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        simd_->matmul_for(DType::kF32).f32(w.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
        expect_close(y_simd, y_ref, 1e-5f);
      }
    }
  }
}

TEST_P(KernelsTest, MatmulF16AndBF16MatchScalar) {
  // 13 tokens: prefill-sized calls take the tiled GEMMs (two tiles of 6 tokens and a tile of one); 21 rows, a
  // partial tile of 4 rows.
  for (auto [num_out, num_tokens] : {std::pair<int64_t, int64_t>{7, 5}, {21, 13}})
    for (int64_t num_in : kSizes) {
      auto wf = random_vector(size_t(num_out * num_in));
      std::vector<uint16_t> w16(wf.size()), wbf(wf.size());
      for (size_t i = 0; i < wf.size(); ++i) {
        w16[i] = float_to_fp16(wf[i]);
        wbf[i] = float_to_bf16(wf[i]);
      }
      auto x = random_vector(size_t(num_tokens * num_in));
      std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size());
      ref::matmul_f16(w16.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
      simd_->matmul_for(DType::kF16).f32(w16.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
      expect_close(y_simd, y_ref, 1e-5f);
      // The AVX512-BF16 kernel rounds the activations to bf16 (KernelTable's contract): it matches the reference on
      // bf16-rounded activations to f32 rounding, and the reference on the f32 ones within 2^-8 of sum |w x|.
      const bool rounds_x = GetParam() >= Isa::kAvx512 && cpu_features().avx512_bf16;
      std::vector<float> x_used = x;
      if (rounds_x)
        for (float& v : x_used) v = bf16_to_float(float_to_bf16(v));
      ref::matmul_bf16(wbf.data(), x_used.data(), y_ref.data(), num_out, num_in, num_tokens);
      simd_->matmul_for(DType::kBF16).f32(wbf.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
      for (int64_t t = 0; t < num_tokens; ++t) {
        for (int64_t o = 0; o < num_out; ++o) {
          double abs_sum = 0.0;
          for (int64_t i = 0; i < num_in; ++i)
            abs_sum += std::fabs(double(bf16_to_float(wbf[size_t(o * num_in + i)])) * x[size_t(t * num_in + i)]);
          const size_t k = size_t(t * num_out + o);
          ASSERT_NEAR(y_simd[k], y_ref[k], 1e-5 * (1.0 + abs_sum)) << "num_in " << num_in << " at " << k;
        }
      }
      if (rounds_x) {
        std::vector<float> y_f32(y_ref.size());
        ref::matmul_bf16(wbf.data(), x.data(), y_f32.data(), num_out, num_in, num_tokens);
        double worst = 0.0;
        for (size_t k = 0; k < y_f32.size(); ++k) worst = std::max(worst, double(std::fabs(y_simd[k] - y_f32[k])));
        EXPECT_LT(worst, std::ldexp(1.0, -8) * double(num_in)) << "num_in " << num_in;  // |w x| <= 1 each
      }
    }
}

// A token's outputs are the bits it gets alone, whatever the tokens beside it (how many, in which group of the
// kernel's token passes) and whichever rows (a group of 16 rows or the partial last one): speculative decoding
// verifies k + 1 tokens in one call and must reproduce plain decoding's logits exactly.
TEST_P(KernelsTest, FloatMatmulGivesATokenItsOwnBitsInAnyBatch) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    // 1100: rows over 4 KiB, with a tail (one token's such rows take a row-at-a-time kernel at the avx2 and avx512
    // levels), and several of the tiled GEMMs' input chunks. Batches of 2 to 8 tokens take passes whose row blocks
    // differ by size; 19 is several passes; 12 and more take the tiled GEMMs, in tiles of 6 and a tail tile; 103
    // crosses their blocks of tokens (48 or 96) with a partial block and a partial tile. 2800: rows too long for
    // a block of 48 tokens to stay in L2, which the avx512 f16 GEMM runs in blocks of 96 and passes of 32 rows (37
    // rows: one whole pass, then a pass of one partial group).
    for (int64_t num_in : {8, 64, 172, 1100, 2800})
      for (int64_t num_tokens : {2, 3, 4, 5, 6, 7, 8, 12, 19, 31, 103}) {
        const int64_t num_out = 37;
        auto wf = random_vector(size_t(num_out * num_in));
        std::vector<uint16_t> w16(wf.size());
        for (size_t i = 0; i < wf.size(); ++i)
          w16[i] = dtype == DType::kF16 ? float_to_fp16(wf[i]) : float_to_bf16(wf[i]);
        const void* w = dtype == DType::kF32 ? static_cast<const void*>(wf.data()) : w16.data();
        auto x = random_vector(size_t(num_tokens * num_in));
        std::vector<float> together(size_t(num_tokens * num_out));
        simd_->matmul_for(dtype).f32(w, x.data(), together.data(), num_out, num_in, num_tokens);
        for (int64_t t = 0; t < num_tokens; ++t) {
          std::vector<float> alone(static_cast<size_t>(num_out));
          simd_->matmul_for(dtype).f32(w, x.data() + t * num_in, alone.data(), num_out, num_in, 1);
          ASSERT_EQ(std::memcmp(alone.data(), together.data() + t * num_out, alone.size() * sizeof(float)), 0)
              << dtype_name(dtype) << " num_in " << num_in << " of " << num_tokens << " tokens, token " << t;
        }
      }
  }
}

// The avx512 level's bf16 kernel for CPUs without AVX512-BF16 (shift-widened weights, f32 fmas): the table of a CPU
// with AVX512-BF16 layers vdpbf16ps over it, so it is called here directly. It matches the reference to f32 rounding
// and gives a token its own bits in any batch (decode passes and the tiled GEMM alike).
TEST(KernelsAvx512Test, Bf16WithoutAvx512Bf16MatchesScalarAndGivesATokenItsOwnBits) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "avx512 is not available on this CPU";
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t num_in : {8, 172, 1100, 2800})  // 2800: the tiled GEMM's blocks of 96 tokens and passes of 32 rows
    for (int64_t num_tokens : {5, 13, 103}) {
      const int64_t num_out = 37;
      std::vector<uint16_t> w(size_t(num_out * num_in));
      for (uint16_t& v : w) v = float_to_bf16(dist(rng));
      std::vector<float> x(size_t(num_tokens * num_in));
      for (float& v : x) v = dist(rng);
      std::vector<float> together(size_t(num_tokens * num_out)), y_ref(together.size());
      avx512::matmul_bf16(w.data(), x.data(), together.data(), num_out, num_in, num_tokens);
      ref::matmul_bf16(w.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
      expect_close(together, y_ref, 1e-5f * float(num_in));
      for (int64_t t = 0; t < num_tokens; ++t) {
        std::vector<float> alone(static_cast<size_t>(num_out));
        avx512::matmul_bf16(w.data(), x.data() + t * num_in, alone.data(), num_out, num_in, 1);
        ASSERT_EQ(std::memcmp(alone.data(), together.data() + t * num_out, alone.size() * sizeof(float)), 0)
            << "num_in " << num_in << " of " << num_tokens << " tokens, token " << t;
      }
    }
}

// The AVX512-BF16 kernel against its own scalar reference (ref/matmul_bf16_pairs.cc: bf16-rounded activations,
// vdpbf16ps's pair order and flushes, transpose_sum16's reduction): the same bits, for decode and prefill-sized calls,
// row tails and partial row groups, activations that are subnormal or large, and weights at every 2-byte offset in
// a 64-byte line (a GGUF aligns tensors to 32 bytes only; the kernel's steps start at the next line).
TEST(KernelsAvx512Bf16Test, MatchesItsPairwiseReferenceBitForBit) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "avx512 is not available on this CPU";
  if (!cpu_features().avx512_bf16) GTEST_SKIP() << "this CPU has no AVX512-BF16 (vdpbf16ps)";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t num_in : {8, 31, 32, 33, 64, 172, 1100, 1152})
    for (int64_t num_tokens : {1, 2, 5, 13, 103})
      for (int64_t offset : {0, 1, 7, 16, 31}) {  // in bf16 values past a 64-byte line
        const int64_t num_out = 37;
        std::vector<uint16_t> storage(size_t(num_out * num_in + 64));
        auto* line = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) / 64 * 64);
        std::span<uint16_t> w(line + offset, size_t(num_out * num_in));
        for (uint16_t& v : w) v = float_to_bf16(dist(rng));
        std::vector<float> x(size_t(num_tokens * num_in));
        for (size_t i = 0; i < x.size(); ++i) {
          x[i] = dist(rng);
          if (i % 97 == 3) x[i] = 1e-39f * x[i];  // subnormal: rounds to zero
          if (i % 89 == 5) x[i] = 3e30f * x[i];   // large: sums whose rounding shows the order
        }
        std::vector<float> y_simd(size_t(num_tokens * num_out)), y_ref(y_simd.size());
        avx512_bf16::matmul_bf16(w.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
        ref::matmul_bf16_pairs(w.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        ASSERT_EQ(std::memcmp(y_simd.data(), y_ref.data(), y_ref.size() * sizeof(float)), 0)
            << "num_in " << num_in << ", " << num_tokens << " tokens, weights " << offset << " values past a line";
      }
}

// The pairwise reference by hand: an activation of 1.5 + 2^-9 rounds to bf16's 1.5 (nearest even), a subnormal
// activation reads as zero, and a lane adds a pair's odd product before its even one: lane 0 holds 2^-24 from its
// first pair, then 2^-24 + 1 rounds to 1 before the even 2^-24 comes (even first, or index order, gives 1 + 2^-23).
TEST(KernelsRefTest, Bf16PairsReferenceRoundsActivationsAndAddsAsVdpbf16ps) {
  const float two_m12 = std::ldexp(1.0f, -12);
  std::vector<uint16_t> w(34, 0);
  std::vector<float> x(34, 0.0f);
  w[0] = float_to_bf16(two_m12), x[0] = two_m12;                   // lane 0, first pair, even: 2^-24
  w[32] = float_to_bf16(two_m12), x[32] = two_m12;                 // lane 0, second pair, even: 2^-24
  w[33] = float_to_bf16(1.0f), x[33] = 1.0f;                       // lane 0, second pair, odd: 1
  w[2] = float_to_bf16(2.0f), x[2] = 1.5f + std::ldexp(1.0f, -9);  // lane 1: 2 * 1.5
  w[4] = float_to_bf16(1.0f), x[4] = 1e-39f;                       // lane 2: zero
  float y = 0.0f;
  ref::matmul_bf16_pairs(w.data(), x.data(), &y, 1, 34, 1);
  EXPECT_EQ(y, 4.0f);  // lanes 1 + 3
  EXPECT_EQ(ref::bf16_activation(1.5f + std::ldexp(1.0f, -9)), float_to_bf16(1.5f));
  EXPECT_EQ(ref::bf16_activation(-1e-39f), 0x8000);
}

TEST(KernelsRefTest, MatmulReferenceIsARealMatmul) {
  // 2x3 weights times two tokens, worked out by hand.
  const float w[] = {1, 2, 3, -1, 0, 1};
  const float x[] = {1, 1, 1, 2, -1, 0.5f};
  float y[4];
  ref::matmul_f32(w, x, y, 2, 3, 2);
  EXPECT_FLOAT_EQ(y[0], 6.0f);
  EXPECT_FLOAT_EQ(y[1], 0.0f);
  EXPECT_FLOAT_EQ(y[2], 1.5f);
  EXPECT_FLOAT_EQ(y[3], -1.5f);
}

TEST_P(KernelsTest, VectorOpsMatchScalar) {
  for (int64_t n : kSizes) {
    auto a = random_vector(size_t(n), 3.0f);
    auto b = random_vector(size_t(n), 3.0f);
    EXPECT_NEAR(simd_->dot(a.data(), b.data(), n), ref::dot(a.data(), b.data(), n), 1e-4f * (1 + n));

    std::vector<float> y_ref = b, y_simd = b;
    ref::axpy(0.37f, a.data(), y_ref.data(), n);
    simd_->axpy(0.37f, a.data(), y_simd.data(), n);
    expect_close(y_simd, y_ref, 1e-6f);

    auto weight = random_vector(size_t(n));
    std::vector<float> n_ref(static_cast<size_t>(n)), n_simd(static_cast<size_t>(n));
    ref::rmsnorm(a.data(), weight.data(), n_ref.data(), n, 1e-5f);
    simd_->rmsnorm(a.data(), weight.data(), n_simd.data(), n, 1e-5f);
    expect_close(n_simd, n_ref, 1e-5f);

    // silu over a wide range, including large magnitudes where exp saturates.
    auto gate = random_vector(size_t(n), 30.0f);
    std::vector<float> g_ref = gate, g_simd = gate;
    ref::silu_mul(g_ref.data(), b.data(), n);
    simd_->silu_mul(g_simd.data(), b.data(), n);
    expect_close(g_simd, g_ref, 1e-5f);
  }
}

TEST_P(KernelsTest, SiluMulOfSlicesEqualsTheWholeRow) {
  // The fused FFN applies silu_mul to each thread's slice of the hidden rows right after computing it; that
  // must give the bits of one pass over the whole row, wherever the slices cut the SIMD width.
  for (const KernelTable* k : {kernels_for(Isa::kScalar), simd_}) {
    for (int64_t n : kSizes) {
      auto gate = random_vector(size_t(n), 30.0f);
      auto up = random_vector(size_t(n), 3.0f);
      std::vector<float> whole = gate, sliced = gate;
      k->silu_mul(whole.data(), up.data(), n);
      for (int64_t begin = 0; begin < n;) {
        const int64_t len = std::min<int64_t>(n - begin, 1 + int64_t(rng_() % 13));
        k->silu_mul(sliced.data() + begin, up.data() + begin, len);
        begin += len;
      }
      EXPECT_EQ(sliced, whole) << isa_name(k->isa) << ", n = " << n;
    }
  }
}

TEST_P(KernelsTest, RmsnormMayRunInPlace) {
  auto x = random_vector(37);
  auto weight = random_vector(37);
  std::vector<float> expected(37);
  ref::rmsnorm(x.data(), weight.data(), expected.data(), 37, 1e-5f);
  simd_->rmsnorm(x.data(), weight.data(), x.data(), 37, 1e-5f);
  expect_close(x, expected, 1e-5f);
}

TEST(KernelDispatchTest, BestKernelsIsSupportedAndScalarAlwaysExists) {
  EXPECT_NE(kernels_for(Isa::kScalar), nullptr);
  EXPECT_TRUE(cpu_supports(best_kernels().isa));
  EXPECT_EQ(isa_name(Isa::kAvx2), "avx2");
}

TEST(KernelDispatchTest, LevelNamesRoundTrip) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx})
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  EXPECT_EQ(parse_isa("avx512f"), std::nullopt);
  EXPECT_EQ(parse_isa(""), std::nullopt);
}

TEST(KernelDispatchTest, LevelsAreNested) {
  // A level the CPU runs implies every level below it, and the best one is the highest of them.
  bool below_supported = true;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx}) {
    if (cpu_supports(isa)) {
      EXPECT_TRUE(below_supported) << isa_name(isa);
      EXPECT_LE(isa, best_supported_isa());
      ASSERT_NE(kernels_for(isa), nullptr);
      EXPECT_EQ(kernels_for(isa)->isa, isa);
    } else {
      below_supported = false;
      EXPECT_EQ(kernels_for(isa), nullptr);
      EXPECT_GT(isa, best_supported_isa());
    }
  }
}

TEST(KernelDispatchTest, EveryTableIsComplete) {
  // Every op and every weight dtype the model can hold has its kernels at every level, and each preferred layout is
  // one the table multiplies.
  for (Isa isa : kAllLevels) {
    const KernelTable* t = kernels_for(isa);
    if (t == nullptr) continue;
    SCOPED_TRACE(isa_name(isa));
    EXPECT_NE(t->quantize_row_q8_0, nullptr);
    EXPECT_NE(t->quantize_row_q8_K, nullptr);
    EXPECT_NE(t->quantize_row_int8, nullptr);
    EXPECT_NE(t->rmsnorm, nullptr);
    EXPECT_NE(t->rmsnorm_q8_0, nullptr);
    EXPECT_NE(t->dot, nullptr);
    EXPECT_NE(t->axpy, nullptr);
    EXPECT_NE(t->silu_mul, nullptr);
    EXPECT_NE(t->gelu_mul, nullptr);
    EXPECT_NE(t->paged_attention, nullptr);
    for (size_t d = 0; d < kNumDTypes; ++d) {
      const DType dtype = DType(d);
      EXPECT_NE(t->matmul_for(dtype).f32, nullptr) << dtype_name(dtype);
      const bool int8 = dtype == DType::kInt8 || dtype == DType::kInt8x8 || dtype == DType::kInt8x16;
      const bool kquant = dtype == DType::kQ2_K || dtype == DType::kQ3_K || dtype == DType::kQ4_K ||
                          dtype == DType::kQ5_K || dtype == DType::kQ6_K || dtype == DType::kQ2_Kx8 ||
                          dtype == DType::kQ3_Kx8 || dtype == DType::kQ4_Kx8 || dtype == DType::kQ5_Kx8 ||
                          dtype == DType::kQ6_Kx8 || dtype == DType::kQ7_K || dtype == DType::kQ7_Kx8 ||
                          dtype == DType::kIQ4_XS || dtype == DType::kIQ4_XSx8;  // q8_K, as ggml's
      const bool q8 = !int8 && !kquant && dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16;
      EXPECT_EQ(t->matmul_for(dtype).int8 != nullptr, int8) << dtype_name(dtype);
      EXPECT_EQ(t->matmul_for(dtype).q8_0 != nullptr, q8) << dtype_name(dtype);
      EXPECT_EQ(t->matmul_for(dtype).q8_K != nullptr, kquant) << dtype_name(dtype);
      for (const std::optional<DType>& layout : t->layouts[d])
        EXPECT_TRUE(!layout || t->matmul_for(*layout).f32 != nullptr) << dtype_name(dtype);
    }
  }
}

TEST(KernelDispatchTest, SummaryNamesTheLevel) {
  const std::string summary = isa_summary(*kernels_for(Isa::kScalar));
  EXPECT_EQ(summary.rfind("scalar kernels (cpu: ", 0), 0u) << summary;
}

}  // namespace
}  // namespace pagoda::kernels
