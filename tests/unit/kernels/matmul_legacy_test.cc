// ggml's Q4_1 and Q5_1 matmuls (stored and 8-row interleaved) against Q8_0 activations: the stored and the
// interleaved reference give the same bits; the reference is ggml's vec_dot_q4_1_q8_1 / vec_dot_q5_1_q8_1 (written
// out here from the stored bits, with q8_1's activation sum kept in f32) bit for bit, and the product of the
// dequantized weights with the quantized activations up to f32 rounding; every SIMD level gives the reference's bits
// on random shapes (token tails, odd row groups, both entry points, row slices as a thread pool cuts them) and on
// the extreme quants and activations; every level prefers the interleaved layouts and reads Q8_0 activations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "quant/block_legacy_x8.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

struct AffineType {
  const char* name;
  DType plain, packed;
  int64_t block_bytes;
  int64_t qs_offset;  // where the 16 bytes of nibbles start (after d, m and Q5_1's qh)
  void (*dequantize)(const void* blocks, float* y, int64_t n);
  void (*repack)(const void* src, void* dst, int64_t num_rows, int64_t num_blocks);
};

const AffineType kAffineTypes[] = {
    {"q4_1", DType::kQ4_1, DType::kQ4_1x8, sizeof(quant::BlockQ4_1), 4,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_q4_1(static_cast<const quant::BlockQ4_1*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_q4_1x8(static_cast<const quant::BlockQ4_1*>(s), static_cast<quant::BlockQ4_1x8*>(d), r, n);
     }},
    {"q5_1", DType::kQ5_1, DType::kQ5_1x8, sizeof(quant::BlockQ5_1), 8,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_q5_1(static_cast<const quant::BlockQ5_1*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_q5_1x8(static_cast<const quant::BlockQ5_1*>(s), static_cast<quant::BlockQ5_1x8*>(d), r, n);
     }},
};

struct AffineWeights {
  std::vector<uint8_t> plain, packed;
};

// num_out rows of random blocks: random quant bytes (and fifth bits), fp16 d in [2^-10, 2^-6) and m of either sign
// in [2^-6, 2^-2); `fill` >= 0 sets every quant and fifth-bit byte to it instead.
AffineWeights make_affine_weights(const AffineType& type, std::mt19937& rng, int64_t num_out, int64_t num_in,
                                  int fill = -1) {
  const int64_t num_blocks = num_out * num_in / 32;
  AffineWeights w;
  w.plain.resize(size_t(num_blocks * type.block_bytes));
  for (uint8_t& b : w.plain) b = fill >= 0 ? uint8_t(fill) : uint8_t(rng());
  std::uniform_real_distribution<float> step(1.0f / 1024, 1.0f / 64), min(1.0f / 64, 1.0f / 4);
  for (int64_t b = 0; b < num_blocks; ++b) {
    uint8_t* block = w.plain.data() + b * type.block_bytes;
    const uint16_t d = float_to_fp16(step(rng)), m = float_to_fp16(rng() % 2 ? min(rng) : -min(rng));
    std::memcpy(block, &d, 2);
    std::memcpy(block + 2, &m, 2);
  }
  w.packed.resize(size_t(num_out * dtype_row_bytes(type.packed, num_in)));
  type.repack(w.plain.data(), w.packed.data(), num_out, num_in / 32);
  return w;
}

TEST(AffineMatmulTest, StoredAndInterleavedReferencesGiveTheSameBits) {
  std::mt19937 rng(3);
  const int64_t num_in = 512, num_out = 24, num_tokens = 3;
  for (const AffineType& type : kAffineTypes) {
    const AffineWeights w = make_affine_weights(type, rng, num_out, num_in);
    const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
    std::vector<float> y_plain(size_t(num_tokens * num_out)), y_packed(y_plain.size());
    const KernelTable& scalar = *kernels_for(Isa::kScalar);
    scalar.matmul_for(type.plain).f32(w.plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
    scalar.matmul_for(type.packed).f32(w.packed.data(), x.data(), y_packed.data(), num_out, num_in, num_tokens);
    EXPECT_EQ(std::memcmp(y_plain.data(), y_packed.data(), y_plain.size() * sizeof(float)), 0) << type.name;
  }
}

TEST(AffineMatmulTest, ReferenceReadsTheStoredBitsAsGgmlsVecDot) {
  // ggml's vec_dot_q4_1_q8_1 / q5_1_q8_1 from the stored bits: per block, the integer sum of q (nibble, plus bit j of
  // qh as bit 4 for Q5_1) times the q8 values, then sumf += d_w d_x sumi + m_w s, s = d_x sum(q8). ggml stores s as
  // fp16; here it is f32, and each block's two terms are added to the running sum one fused step at a time.
  std::mt19937 rng(17);
  const int64_t num_in = 1024, num_out = 16, num_tokens = 3, num_blocks = num_in / 32;
  for (const AffineType& type : kAffineTypes) {
    const AffineWeights w = make_affine_weights(type, rng, num_out, num_in);
    const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
    std::vector<quant::BlockQ8_0> xq(size_t(num_tokens * num_blocks));
    quant::quantize_row_q8_0(x.data(), xq.data(), num_tokens * num_in);
    std::vector<float> want(size_t(num_tokens * num_out)), got(want.size()), got_packed(want.size());
    for (int64_t t = 0; t < num_tokens; ++t)
      for (int64_t o = 0; o < num_out; ++o) {
        float sumf = 0.0f;
        for (int64_t b = 0; b < num_blocks; ++b) {
          const uint8_t* blk = w.plain.data() + (o * num_blocks + b) * type.block_bytes;
          uint16_t d, m;
          uint32_t qh = 0;
          std::memcpy(&d, blk, 2);
          std::memcpy(&m, blk + 2, 2);
          if (type.plain == DType::kQ5_1) std::memcpy(&qh, blk + 4, 4);
          const quant::BlockQ8_0& y = xq[size_t(t * num_blocks + b)];
          int32_t sumi = 0, sum_y = 0;
          for (int j = 0; j < 16; ++j) {
            const int q0 = (blk[type.qs_offset + j] & 0xf) | int((qh >> j) & 1) << 4;
            const int q1 = (blk[type.qs_offset + j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
            sumi += q0 * y.qs[j] + q1 * y.qs[j + 16];
            sum_y += y.qs[j] + y.qs[j + 16];
          }
          const float dy = fp16_to_float(y.d);
          sumf = std::fma(fp16_to_float(d) * dy, float(sumi), sumf);
          sumf = std::fma(fp16_to_float(m), dy * float(sum_y), sumf);
        }
        want[size_t(t * num_out + o)] = sumf;
      }
    const KernelTable& scalar = *kernels_for(Isa::kScalar);
    scalar.matmul_for(type.plain).f32(w.plain.data(), x.data(), got.data(), num_out, num_in, num_tokens);
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << type.name;
    scalar.matmul_for(type.packed)
        .q8_0(w.packed.data(), xq.data(), got_packed.data(), num_out, num_in, num_tokens, num_out);
    EXPECT_EQ(std::memcmp(want.data(), got_packed.data(), want.size() * sizeof(float)), 0) << type.name;
  }
}

TEST(AffineMatmulTest, ReferenceIsTheProductOfTheDequantizedWeights) {
  std::mt19937 rng(5);
  const int64_t num_in = 768, num_out = 16, num_tokens = 2;
  for (const AffineType& type : kAffineTypes) {
    const AffineWeights w = make_affine_weights(type, rng, num_out, num_in);
    const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
    std::vector<float> wf(size_t(num_out * num_in));
    type.dequantize(w.plain.data(), wf.data(), num_out * num_in);
    const std::vector<float> xr = q8_0_round_trip(x);
    std::vector<float> y(size_t(num_tokens * num_out));
    kernels_for(Isa::kScalar)
        ->matmul_for(type.plain)
        .f32(w.plain.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_near_exact_products(y, wf, xr, num_out, num_in, num_tokens, type.name);
  }
}

class AffineSimdTest : public SimdLevelTest {
 protected:
  std::mt19937 rng_{31};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(AffineSimdTest);

TEST_P(AffineSimdTest, MatchesScalarBitForBit) {
  for (const AffineType& type : kAffineTypes) {
    for (int64_t num_in : {32, 256, 2080}) {
      for (int64_t num_out : {8, 16, 40, 200}) {  // 200 rows: an odd number of groups
        for (int64_t num_tokens : {1, 2, 3, 4, 5, 8, 9, 12, 19}) {
          const AffineWeights w = make_affine_weights(type, rng_, num_out, num_in);
          const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
          std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
          kernels_for(Isa::kScalar)
              ->matmul_for(type.packed)
              .f32(w.packed.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
          simd_->matmul_for(type.packed).f32(w.packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
          ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0)
              << type.name << " num_in " << num_in << " num_out " << num_out << " num_tokens " << num_tokens;
        }
      }
    }
  }
}

TEST_P(AffineSimdTest, ExtremeQuantsAndActivationsStayExact) {
  // Every quant and fifth-bit byte 0x00 (q = 0) or 0xff (q = 15, or 31 for Q5_1) against activations of +-127: the
  // largest partial sums the kernels form (AVX2's int16 pair sums included).
  const int64_t num_in = 512, num_out = 16, num_tokens = 3;
  std::vector<float> x(size_t(num_tokens * num_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 5) % 3 ? 127.0f : -127.0f;
  for (const AffineType& type : kAffineTypes)
    for (int fill : {0x00, 0xff, 0x5a}) {
      const AffineWeights w = make_affine_weights(type, rng_, num_out, num_in, fill);
      std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
      kernels_for(Isa::kScalar)
          ->matmul_for(type.plain)
          .f32(w.plain.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
      simd_->matmul_for(type.packed).f32(w.packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
      ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0)
          << type.name << " fill " << fill;
    }
}

TEST_P(AffineSimdTest, RowSlicesAndPrequantizedInputGiveTheSameBits) {
  const int64_t num_in = 768, num_out = 48, num_tokens = 11;
  for (const AffineType& type : kAffineTypes) {
    const AffineWeights w = make_affine_weights(type, rng_, num_out, num_in);
    const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 1.0f);
    std::vector<quant::BlockQ8_0> xq(x.size() / kQk);
    quant::quantize_row_q8_0(x.data(), xq.data(), int64_t(x.size()));
    const MatmulKernels& k = simd_->matmul_for(type.packed);
    ASSERT_NE(k.q8_0, nullptr) << type.name;
    const auto run = [&](const uint8_t* w_rows, int64_t rows, int64_t first, int64_t tokens, float* y) {
      k.q8_0(w_rows, xq.data() + first * num_in / kQk, y, rows, num_in, tokens, num_out);
    };
    std::vector<float> whole(size_t(num_tokens * num_out)), from_f32(whole.size()), sliced(whole.size(), -1.0f);
    run(w.packed.data(), num_out, 0, num_tokens, whole.data());
    k.f32(w.packed.data(), x.data(), from_f32.data(), num_out, num_in, num_tokens);
    EXPECT_EQ(std::memcmp(whole.data(), from_f32.data(), whole.size() * sizeof(float)), 0) << type.name;
    const int64_t row_bytes = dtype_row_bytes(type.packed, num_in);
    for (int64_t begin = 0; begin < num_out; begin += 16)
      run(w.packed.data() + begin * row_bytes, 16, 0, num_tokens, sliced.data() + begin);
    EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), whole.size() * sizeof(float)), 0) << type.name;
    std::vector<float> alone(static_cast<size_t>(num_out));
    run(w.packed.data(), num_out, 9, 1, alone.data());
    EXPECT_EQ(std::memcmp(alone.data(), whole.data() + 9 * num_out, alone.size() * sizeof(float)), 0) << type.name;
  }
}

TEST(AffineMatmulTest, EveryLevelPrefersTheInterleavedLayouts) {
  for (Isa isa : kAllLevels) {
    const KernelTable* table = kernels_for(isa);
    if (table == nullptr) continue;
    for (const AffineType& type : kAffineTypes) {
      EXPECT_EQ(table->layouts[size_t(type.plain)][0], type.packed) << isa_name(isa) << " " << type.name;
      EXPECT_NE(table->matmul_for(type.packed).q8_0, nullptr) << isa_name(isa) << " " << type.name;
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
