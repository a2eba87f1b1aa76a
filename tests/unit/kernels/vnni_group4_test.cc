// The avx_vnni kernels as the VEX (AVX-VNNI) compilation runs them, token groups of 4 (pairs of row groups with 2),
// built with the EVEX encoding (src/kernels/CMakeLists.txt) so that a CPU without AVX-VNNI but with AVX512-VNNI tests
// that loop structure: every entry point (the K-quants' and the 4-bit codebook types' too) gives the scalar
// reference's bits over token counts that exercise every group and tail.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/avx_vnni/avx_vnni_kernels.h"
#include "kernels/cpu_features.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_awq_int4.h"
#include "quant/block_awq_int4x8.h"
#include "quant/block_iq4_x8.h"
#include "quant/block_kquant_x8.h"
#include "quant/block_q4_0.h"
#include "quant/block_q4_0x8.h"
#include "quant/block_q8_0.h"
#include "quant/block_q8_0x8.h"
#include "quant/row_int8.h"
#include "quant/row_int8x8.h"
#include "support/kernel_test_values.h"

PAGODA_DECLARE_AVX_VNNI_KERNELS(avx_vnni_evex_group4)

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

namespace g4 = avx_vnni_evex_group4;

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

class VnniGroup4Test : public ::testing::Test {
 protected:
  void SetUp() override {
    const CpuFeatures& f = cpu_features();
    if (!(f.os_zmm && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512_vnni && f.avx2 && f.fma &&
          f.f16c))
      GTEST_SKIP() << "this CPU has no AVX512-VL with VNNI to run the group-4 build through";
  }
  std::mt19937 rng_{77};
};

TEST_F(VnniGroup4Test, EveryEntryPointGivesTheReferenceBits) {
  for (int64_t num_in : {64, 2048}) {
    for (int64_t num_out : {8, 24, 40}) {
      for (int64_t num_tokens : {1, 2, 3, 4, 5, 7, 9}) {
        SCOPED_TRACE(testing::Message() << "num_in " << num_in << " num_out " << num_out << " tokens " << num_tokens);
        const std::vector<float> wf = random_floats(rng_, num_out * num_in, 1.0f);
        const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
        std::vector<float> y_ref(size_t(num_tokens * num_out)), y(y_ref.size(), NAN);

        std::vector<quant::BlockQ4_0> q4(size_t(num_out * num_in / 32));
        quant::quantize_row_q4_0(wf.data(), q4.data(), num_out * num_in);
        std::vector<quant::BlockQ4_0x8> q4x8(q4.size());
        quant::repack_q4_0x8(q4.data(), q4x8.data(), num_out, num_in / 32);
        ref::matmul_q4_0x8(q4x8.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        g4::matmul_q4_0x8(q4x8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
        expect_same_bits(y, y_ref, "q4_0x8");

        std::vector<quant::BlockQ8_0> q8(size_t(num_out * num_in / 32));
        quant::quantize_row_q8_0(wf.data(), q8.data(), num_out * num_in);
        for (size_t b = 0; b < q8.size(); b += 3) q8[b].qs[b % 32] = -128;
        std::vector<quant::BlockQ8_0x8> q8x8(q8.size());
        quant::repack_q8_0x8(q8.data(), q8x8.data(), num_out, num_in / 32);
        ref::matmul_q8_0x8(q8x8.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        g4::matmul_q8_0x8(q8x8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
        expect_same_bits(y, y_ref, "q8_0x8");

        const int64_t awq_bytes = quant::awq_int4_row_bytes(num_in, 32);
        std::vector<uint8_t> awq(size_t(num_out * awq_bytes));
        for (int64_t o = 0; o < num_out; ++o)
          quant::quantize_row_awq_int4(wf.data() + o * num_in, awq.data() + o * awq_bytes, num_in, 32);
        std::vector<quant::BlockAwqInt4x8> awqx8(size_t(num_out / 8 * num_in / 32));
        quant::repack_awq_int4x8(awq.data(), awqx8.data(), num_out, num_in, 32);
        ref::matmul_awq_int4x8(awqx8.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        g4::matmul_awq_int4x8(awqx8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
        expect_same_bits(y, y_ref, "awq_int4x8");

        const int64_t row_bytes = quant::int8_row_bytes(num_in);
        std::vector<uint8_t> i8(size_t(num_out * row_bytes)), i8x8(i8.size());
        for (int64_t o = 0; o < num_out; ++o)
          quant::quantize_row_int8(wf.data() + o * num_in, i8.data() + o * row_bytes, num_in);
        quant::repack_int8x8(i8.data(), i8x8.data(), num_out, num_in);
        ref::matmul_int8x8(i8x8.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        g4::matmul_int8x8(i8x8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
        expect_same_bits(y, y_ref, "int8x8");
      }
    }
  }
}

TEST_F(VnniGroup4Test, KquantsGiveTheReferenceBits) {
  const int64_t num_in = 512, num_out = 24;
  // Random super-blocks (any bytes are valid ones) with small fp16 multipliers.
  auto random_bytes = [&](size_t n) {
    std::vector<uint8_t> v(n);
    for (uint8_t& b : v) b = uint8_t(rng_());
    return v;
  };
  const int64_t num_blocks = num_out * num_in / quant::kQK_K;
  std::vector<quant::BlockQ4_K> q4(static_cast<size_t>(num_blocks));
  std::vector<quant::BlockQ5_K> q5(static_cast<size_t>(num_blocks));
  std::vector<quant::BlockQ6_K> q6(static_cast<size_t>(num_blocks));
  std::vector<quant::BlockQ2_K> q2(static_cast<size_t>(num_blocks));
  std::vector<quant::BlockQ3_K> q3(static_cast<size_t>(num_blocks));
  const std::vector<uint8_t> b2 = random_bytes(sizeof(quant::BlockQ2_K) * q2.size()),
                             b3 = random_bytes(sizeof(quant::BlockQ3_K) * q3.size());
  std::memcpy(q2.data(), b2.data(), b2.size());
  std::memcpy(q3.data(), b3.data(), b3.size());
  const std::vector<uint8_t> b4 = random_bytes(sizeof(quant::BlockQ4_K) * q4.size()),
                             b5 = random_bytes(sizeof(quant::BlockQ5_K) * q5.size()),
                             b6 = random_bytes(sizeof(quant::BlockQ6_K) * q6.size());
  std::memcpy(q4.data(), b4.data(), b4.size());
  std::memcpy(q5.data(), b5.data(), b5.size());
  std::memcpy(q6.data(), b6.data(), b6.size());
  for (int64_t b = 0; b < num_blocks; ++b) {
    q4[size_t(b)].d = q4[size_t(b)].dmin = q5[size_t(b)].d = q5[size_t(b)].dmin = q6[size_t(b)].d =
        b % 2 ? 0x1400 : 0x9400;
    q2[size_t(b)].d = q2[size_t(b)].dmin = q3[size_t(b)].d = b % 2 ? 0x1400 : 0x9400;
  }
  std::vector<quant::BlockQ2_Kx8> q2x8(q2.size());
  std::vector<quant::BlockQ3_Kx8> q3x8(q3.size());
  quant::repack_q2_Kx8(q2.data(), q2x8.data(), num_out, num_in / quant::kQK_K);
  quant::repack_q3_Kx8(q3.data(), q3x8.data(), num_out, num_in / quant::kQK_K);
  std::vector<quant::BlockQ4_Kx8> q4x8(q4.size());
  std::vector<quant::BlockQ5_Kx8> q5x8(q5.size());
  std::vector<quant::BlockQ6_Kx8> q6x8(q6.size());
  quant::repack_q4_Kx8(q4.data(), q4x8.data(), num_out, num_in / quant::kQK_K);
  quant::repack_q5_Kx8(q5.data(), q5x8.data(), num_out, num_in / quant::kQK_K);
  quant::repack_q6_Kx8(q6.data(), q6x8.data(), num_out, num_in / quant::kQK_K);
  for (int64_t num_tokens : {1, 2, 3, 4, 5, 7, 9}) {
    SCOPED_TRACE(testing::Message() << "tokens " << num_tokens);
    const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
    std::vector<float> y_ref(size_t(num_tokens * num_out)), y(y_ref.size(), NAN);
    ref::matmul_q4_K(q4.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    g4::matmul_q4_Kx8(q4x8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_same_bits(y, y_ref, "q4_Kx8");
    ref::matmul_q5_K(q5.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    g4::matmul_q5_Kx8(q5x8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_same_bits(y, y_ref, "q5_Kx8");
    ref::matmul_q6_K(q6.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    g4::matmul_q6_Kx8(q6x8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_same_bits(y, y_ref, "q6_Kx8");
    ref::matmul_q2_K(q2.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    g4::matmul_q2_Kx8(q2x8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_same_bits(y, y_ref, "q2_Kx8");
    ref::matmul_q3_K(q3.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    g4::matmul_q3_Kx8(q3x8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_same_bits(y, y_ref, "q3_Kx8");
  }
}

TEST_F(VnniGroup4Test, CodebookTypesGiveTheReferenceBits) {
  const int64_t num_in = 512, num_out = 24;
  std::vector<quant::BlockIQ4_NL> nl(size_t(num_out * num_in / 32));
  std::vector<quant::BlockIQ4_XS> xs(size_t(num_out * num_in / 256));
  std::vector<quant::BlockMXFP4> mx(nl.size());
  auto fill = [&](void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) static_cast<uint8_t*>(p)[i] = uint8_t(rng_());
  };
  fill(nl.data(), nl.size() * sizeof(nl[0]));
  fill(xs.data(), xs.size() * sizeof(xs[0]));
  fill(mx.data(), mx.size() * sizeof(mx[0]));
  for (size_t b = 0; b < nl.size(); ++b) {
    nl[b].d = b % 2 ? 0x1400 : 0x9400;
    mx[b].e = uint8_t(118 + b % 4);
  }
  for (size_t b = 0; b < xs.size(); ++b) xs[b].d = b % 2 ? 0x1400 : 0x9400;
  std::vector<quant::BlockIQ4_NLx8> nlx8(nl.size() / 8);
  std::vector<quant::BlockIQ4_XSx8> xsx8(xs.size() / 8);
  std::vector<quant::BlockMXFP4x8> mxx8(mx.size() / 8);
  quant::repack_iq4_nlx8(nl.data(), nlx8.data(), num_out, num_in / 32);
  quant::repack_iq4_xsx8(xs.data(), xsx8.data(), num_out, num_in / 256);
  quant::repack_mxfp4x8(mx.data(), mxx8.data(), num_out, num_in / 32);
  for (int64_t num_tokens : {1, 2, 3, 4, 5, 7, 9}) {
    SCOPED_TRACE(testing::Message() << "tokens " << num_tokens);
    const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
    std::vector<float> y_ref(size_t(num_tokens * num_out)), y(y_ref.size(), NAN);
    ref::matmul_iq4_nl(nl.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    g4::matmul_iq4_nlx8(nlx8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_same_bits(y, y_ref, "iq4_nlx8");
    ref::matmul_iq4_xs(xs.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    g4::matmul_iq4_xsx8(xsx8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_same_bits(y, y_ref, "iq4_xsx8");
    ref::matmul_mxfp4(mx.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    g4::matmul_mxfp4x8(mxx8.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_same_bits(y, y_ref, "mxfp4x8");
  }
}

}  // namespace
}  // namespace pagoda::kernels
