// The K-quant matmuls (Q2_K ... Q6_K and pagoda's Q7_K, plain and 8-row interleaved) against q8_K activations: the
// plain and the interleaved reference give the same bits; every SIMD level gives the reference's bits on random shapes
// (token tails, row tiles, row slices as a thread pool cuts them, both entry points, extreme integers); and the
// reference is the product of ggml's dequantized weights with the q8_K activations up to f32 rounding; IQ2_XXS and
// IQ3_XXS blocks carried in Q7_K and Q6_K give, one super-block a row, the bits of ggml's own vec_dot of the i-quant
// block with the same q8_K block.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_iquants.h"
#include "quant/block_kquant_x8.h"
#include "quant/kquant_carrier.h"
#include "quant/lattice_grids.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

struct KquantType {
  const char* name;
  DType plain, packed;
  int64_t block_bytes;
  int64_t d_offset, dmin_offset;  // of the fp16 d and dmin in a block (-1: none)
  void (*dequantize)(const void* blocks, float* y, int64_t n);
  void (*repack)(const void* src, void* dst, int64_t num_rows, int64_t num_super);
  int64_t seven_bit_begin = 0, seven_bit_end = 0;  // a block's bytes that hold 7-bit quants (Q7_K's), masked
};

const KquantType kKquantTypes[] = {
    {"q2_K", DType::kQ2_K, DType::kQ2_Kx8, sizeof(quant::BlockQ2_K), 80, 82,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_q2_K(static_cast<const quant::BlockQ2_K*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_q2_Kx8(static_cast<const quant::BlockQ2_K*>(s), static_cast<quant::BlockQ2_Kx8*>(d), r, n);
     }},
    {"q3_K", DType::kQ3_K, DType::kQ3_Kx8, sizeof(quant::BlockQ3_K), 108, -1,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_q3_K(static_cast<const quant::BlockQ3_K*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_q3_Kx8(static_cast<const quant::BlockQ3_K*>(s), static_cast<quant::BlockQ3_Kx8*>(d), r, n);
     }},
    {"q4_K", DType::kQ4_K, DType::kQ4_Kx8, sizeof(quant::BlockQ4_K), 0, 2,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_q4_K(static_cast<const quant::BlockQ4_K*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_q4_Kx8(static_cast<const quant::BlockQ4_K*>(s), static_cast<quant::BlockQ4_Kx8*>(d), r, n);
     }},
    {"q5_K", DType::kQ5_K, DType::kQ5_Kx8, sizeof(quant::BlockQ5_K), 0, 2,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_q5_K(static_cast<const quant::BlockQ5_K*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_q5_Kx8(static_cast<const quant::BlockQ5_K*>(s), static_cast<quant::BlockQ5_Kx8*>(d), r, n);
     }},
    {"q6_K", DType::kQ6_K, DType::kQ6_Kx8, sizeof(quant::BlockQ6_K), 208, -1,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_q6_K(static_cast<const quant::BlockQ6_K*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_q6_Kx8(static_cast<const quant::BlockQ6_K*>(s), static_cast<quant::BlockQ6_Kx8*>(d), r, n);
     }},
    {"q7_K", DType::kQ7_K, DType::kQ7_Kx8, sizeof(quant::BlockQ7_K), 0, -1,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_q7_K(static_cast<const quant::BlockQ7_K*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_q7_Kx8(static_cast<const quant::BlockQ7_K*>(s), static_cast<quant::BlockQ7_Kx8*>(d), r, n);
     },
     offsetof(quant::BlockQ7_K, q), sizeof(quant::BlockQ7_K)},
};

struct KquantWeights {
  std::vector<uint8_t> plain, packed;
};

// num_out rows of random super-blocks: random bytes, fp16 scales (d, and dmin where the type has it) of either sign
// in [2^-10, 2^-6); `fill` >= 0 sets every other byte to it instead (extreme quants and scales).
KquantWeights make_kquant_weights(const KquantType& type, std::mt19937& rng, int64_t num_out, int64_t num_in,
                                  int fill = -1) {
  const int64_t num_blocks = num_out * num_in / quant::kQK_K;
  KquantWeights w;
  w.plain.resize(size_t(num_blocks * type.block_bytes));
  for (uint8_t& b : w.plain) b = fill >= 0 ? uint8_t(fill) : uint8_t(rng());
  std::uniform_real_distribution<float> scale(1.0f / 1024, 1.0f / 64);
  for (int64_t b = 0; b < num_blocks; ++b) {
    uint8_t* block = w.plain.data() + b * type.block_bytes;
    const uint16_t d = float_to_fp16(rng() % 2 ? scale(rng) : -scale(rng));
    const uint16_t dmin = float_to_fp16(rng() % 2 ? scale(rng) : -scale(rng));
    std::memcpy(block + type.d_offset, &d, 2);
    if (type.dmin_offset >= 0) std::memcpy(block + type.dmin_offset, &dmin, 2);
    for (int64_t i = type.seven_bit_begin; i < type.seven_bit_end; ++i) block[i] &= 127;
  }
  w.packed.resize(size_t(num_out * dtype_row_bytes(type.packed, num_in)));
  type.repack(w.plain.data(), w.packed.data(), num_out, num_in / quant::kQK_K);
  return w;
}

constexpr int64_t kQkK = quant::kQK_K;

std::vector<quant::BlockQ8_K> quantize_kquant_tokens(const std::vector<float>& x) {
  std::vector<quant::BlockQ8_K> xq(x.size() / kQkK);
  quant::quantize_row_q8_K(x.data(), xq.data(), int64_t(x.size()));
  return xq;
}

std::vector<float> q8_K_round_trip(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  quant::dequantize_row_q8_K(quantize_kquant_tokens(x).data(), out.data(), int64_t(x.size()));
  return out;
}

TEST(KquantMatmulTest, PlainAndInterleavedReferencesGiveTheSameBits) {
  std::mt19937 rng(3);
  const int64_t num_in = 512, num_out = 24, num_tokens = 3;
  for (const KquantType& type : kKquantTypes) {
    const KquantWeights w = make_kquant_weights(type, rng, num_out, num_in);
    const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
    std::vector<float> y_plain(size_t(num_tokens * num_out)), y_packed(y_plain.size());
    const KernelTable& scalar = *kernels_for(Isa::kScalar);
    scalar.matmul_for(type.plain).f32(w.plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
    scalar.matmul_for(type.packed).f32(w.packed.data(), x.data(), y_packed.data(), num_out, num_in, num_tokens);
    EXPECT_EQ(std::memcmp(y_plain.data(), y_packed.data(), y_plain.size() * sizeof(float)), 0) << type.name;
  }
}

TEST(KquantMatmulTest, ReferenceIsTheProductOfTheDequantizedWeights) {
  std::mt19937 rng(5);
  const int64_t num_in = 768, num_out = 16, num_tokens = 2;
  for (const KquantType& type : kKquantTypes) {
    const KquantWeights w = make_kquant_weights(type, rng, num_out, num_in);
    const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
    std::vector<float> wf(size_t(num_out * num_in));
    type.dequantize(w.plain.data(), wf.data(), num_out * num_in);
    const std::vector<float> xr = q8_K_round_trip(x);
    std::vector<float> y(size_t(num_tokens * num_out));
    kernels_for(Isa::kScalar)
        ->matmul_for(type.plain)
        .f32(w.plain.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_near_exact_products(y, wf, xr, num_out, num_in, num_tokens, type.name);
  }
}

// ggml's scalar vec_dot of one IQ2_XXS super-block with a q8_K block, from its definition: each 32-value sub-block
// adds (2 ls + 1) * sum(grid * sign * q8) to an int32 bsum, and the result is 0.125 * ((d * y.d) * bsum) in f32.
float ggml_dot_iq2_xxs(const quant::BlockIQ2_XXS& x, const quant::BlockQ8_K& y) {
  int32_t bsum = 0;
  for (int s = 0; s < 8; ++s) {
    uint32_t a, b;
    std::memcpy(&a, &x.qs[4 * s], 4);
    std::memcpy(&b, &x.qs[4 * s + 2], 4);
    int32_t sumi = 0;
    for (int l = 0; l < 4; ++l) {
      const uint64_t point = quant::kIq2XxsGrid[(a >> (8 * l)) & 255];
      const uint8_t signs = quant::iq_signs_of(b >> (7 * l));
      for (int j = 0; j < 8; ++j)
        sumi += int32_t(uint8_t(point >> (8 * j))) * y.qs[32 * s + 8 * l + j] * ((signs >> j) & 1 ? -1 : 1);
    }
    bsum += sumi * int32_t(2 * (b >> 28) + 1);
  }
  const float d = fp16_to_float(x.d) * y.d;
  return 0.125f * (d * float(bsum));
}

// The same for IQ3_XXS: 4-value grid points, two a group of 8, and 0.25 * ((d * y.d) * bsum).
float ggml_dot_iq3_xxs(const quant::BlockIQ3_XXS& x, const quant::BlockQ8_K& y) {
  int32_t bsum = 0;
  for (int s = 0; s < 8; ++s) {
    uint32_t w;
    std::memcpy(&w, &x.qs[64 + 4 * s], 4);
    int32_t sumi = 0;
    for (int l = 0; l < 4; ++l) {
      const uint8_t signs = quant::iq_signs_of(w >> (7 * l));
      for (int j = 0; j < 8; ++j) {
        const uint32_t point = quant::kIq3XxsGrid[x.qs[8 * s + 2 * l + j / 4]];
        sumi += int32_t(uint8_t(point >> (8 * (j % 4)))) * y.qs[32 * s + 8 * l + j] * ((signs >> j) & 1 ? -1 : 1);
      }
    }
    bsum += sumi * int32_t(2 * (w >> 28) + 1);
  }
  const float d = fp16_to_float(x.d) * y.d;
  return 0.25f * (d * float(bsum));
}

// Random i-quant blocks (any bytes; a d in [2^-6, 1) whose carrier scale d / 8 or d / 2 is exact in fp16), their
// carriers' plain and interleaved rows, and q8_K tokens; `level`'s kernels on the carriers must give ggml's dot of
// each i-quant block with each token's block, bit for bit.
template <typename Block, typename Carrier, typename CarrierX8>
void expect_carried_iquant_gives_ggml_dot(const KernelTable& level, std::mt19937& rng, DType plain, DType packed,
                                          bool (*carry)(const Block*, Carrier*, int64_t),
                                          void (*repack)(const Carrier*, CarrierX8*, int64_t, int64_t),
                                          float (*ggml_dot)(const Block&, const quant::BlockQ8_K&)) {
  const int64_t num_out = 16, num_tokens = 5;
  std::vector<Block> blocks(num_out);
  std::uniform_real_distribution<float> scale(1.0f / 64, 1.0f);
  for (Block& b : blocks) {
    auto* bytes = reinterpret_cast<uint8_t*>(&b);
    for (size_t i = 0; i < sizeof(Block); ++i) bytes[i] = uint8_t(rng());
    b.d = float_to_fp16(scale(rng));
  }
  std::vector<Carrier> carried(num_out);
  for (int64_t o = 0; o < num_out; ++o) ASSERT_TRUE(carry(&blocks[size_t(o)], &carried[size_t(o)], kQkK));
  std::vector<uint8_t> interleaved(size_t(dtype_row_bytes(packed, kQkK) * num_out));
  repack(carried.data(), reinterpret_cast<CarrierX8*>(interleaved.data()), num_out, 1);
  const std::vector<quant::BlockQ8_K> xq = quantize_kquant_tokens(random_floats(rng, num_tokens * kQkK, 3.0f));
  for (const auto& [dtype, w] : {std::pair{plain, static_cast<const void*>(carried.data())},
                                 std::pair{packed, static_cast<const void*>(interleaved.data())}}) {
    std::vector<float> y(size_t(num_tokens * num_out), NAN);
    level.matmul_for(dtype).q8_K(w, xq.data(), y.data(), num_out, kQkK, num_tokens, num_out);
    for (int64_t t = 0; t < num_tokens; ++t)
      for (int64_t o = 0; o < num_out; ++o) {
        const float expected = ggml_dot(blocks[size_t(o)], xq[size_t(t)]);
        const float got = y[size_t(t * num_out + o)];
        EXPECT_EQ(std::memcmp(&got, &expected, sizeof(float)), 0)
            << dtype_name(dtype) << " token " << t << " row " << o << ": " << got << " vs ggml's " << expected;
      }
  }
}

void expect_carried_iquants_give_ggml_dots(const KernelTable& level, std::mt19937& rng) {
  expect_carried_iquant_gives_ggml_dot<quant::BlockIQ2_XXS, quant::BlockQ7_K, quant::BlockQ7_Kx8>(
      level, rng, DType::kQ7_K, DType::kQ7_Kx8, quant::carry_row_as_q7_K, quant::repack_q7_Kx8, ggml_dot_iq2_xxs);
  expect_carried_iquant_gives_ggml_dot<quant::BlockIQ3_XXS, quant::BlockQ6_K, quant::BlockQ6_Kx8>(
      level, rng, DType::kQ6_K, DType::kQ6_Kx8, quant::carry_row_as_q6_K, quant::repack_q6_Kx8, ggml_dot_iq3_xxs);
}

TEST(KquantMatmulTest, CarriedIquantsGiveGgmlsVecDotBitForBit) {
  std::mt19937 rng(41);
  expect_carried_iquants_give_ggml_dots(*kernels_for(Isa::kScalar), rng);
}

class KquantSimdTest : public SimdLevelTest {
 protected:
  std::mt19937 rng_{31};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(KquantSimdTest);

TEST_P(KquantSimdTest, MatchesScalarBitForBit) {
  for (const KquantType& type : kKquantTypes) {
    // 2048 inputs x 200 rows: groups of 9 to 13 KiB, so several cross a 128 KiB tile boundary.
    for (int64_t num_in : {256, 512, 2048}) {
      for (int64_t num_out : {8, 16, 40, 200}) {
        // Token groups of 4 and 8 (the kernels' widths) with every kind of tail.
        for (int64_t num_tokens : {1, 2, 3, 4, 5, 8, 9, 12, 19}) {
          const KquantWeights w = make_kquant_weights(type, rng_, num_out, num_in);
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

TEST_P(KquantSimdTest, CarriedIquantsGiveGgmlsVecDotBitForBit) { expect_carried_iquants_give_ggml_dots(*simd_, rng_); }

TEST_P(KquantSimdTest, ExtremeIntegersStayExact) {
  // Every byte 0xff (quants at their maximum, Q6_K and Q7_K scales -1, Q4_K/Q5_K scales 63, Q3_K scales 31, Q2_K
  // scales and mins 15) or 0x80 (Q6_K and Q7_K scales -128) against activations of +-127: the largest partial sums the
  // kernels form.
  const int64_t num_in = 512, num_out = 16, num_tokens = 3;
  std::vector<float> x(size_t(num_tokens * num_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 5) % 3 ? 127.0f : -127.0f;
  for (const KquantType& type : kKquantTypes)
    for (int fill : {0xff, 0x80, 0x3f}) {
      const KquantWeights w = make_kquant_weights(type, rng_, num_out, num_in, fill);
      std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
      kernels_for(Isa::kScalar)
          ->matmul_for(type.plain)
          .f32(w.plain.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
      simd_->matmul_for(type.packed).f32(w.packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
      ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0)
          << type.name << " fill " << fill;
    }
}

TEST_P(KquantSimdTest, RowSlicesAndPrequantizedInputGiveTheSameBits) {
  const int64_t num_in = 768, num_out = 48, num_tokens = 11;
  for (const KquantType& type : kKquantTypes) {
    const KquantWeights w = make_kquant_weights(type, rng_, num_out, num_in);
    const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 1.0f);
    const std::vector<quant::BlockQ8_K> xq = quantize_kquant_tokens(x);
    const MatmulKernels& k = simd_->matmul_for(type.packed);
    std::vector<float> whole(size_t(num_tokens * num_out)), from_f32(whole.size()), sliced(whole.size(), -1.0f);
    k.q8_K(w.packed.data(), xq.data(), whole.data(), num_out, num_in, num_tokens, num_out);
    k.f32(w.packed.data(), x.data(), from_f32.data(), num_out, num_in, num_tokens);
    EXPECT_EQ(std::memcmp(whole.data(), from_f32.data(), whole.size() * sizeof(float)), 0) << type.name;
    // A thread's share: 16 rows, pointer at its first group, same y_stride.
    const int64_t row_bytes = dtype_row_bytes(type.packed, num_in);
    for (int64_t begin = 0; begin < num_out; begin += 16)
      k.q8_K(w.packed.data() + begin * row_bytes, xq.data(), sliced.data() + begin, 16, num_in, num_tokens, num_out);
    EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), whole.size() * sizeof(float)), 0) << type.name;
    // One token alone gives the bits it got inside the batch of eleven.
    std::vector<float> alone(static_cast<size_t>(num_out));
    k.q8_K(w.packed.data(), xq.data() + 9 * num_in / kQkK, alone.data(), num_out, num_in, 1, num_out);
    EXPECT_EQ(std::memcmp(alone.data(), whole.data() + 9 * num_out, alone.size() * sizeof(float)), 0) << type.name;
  }
}

TEST_P(KquantSimdTest, QuantizeRowQ8_KGivesTheReferenceBytes) {
  // Random blocks; one all zero; ties of the rounding (halves of the scale's step); the largest magnitude negative,
  // positive and both (the first of equals sets the sign); tiny and large values.
  const int64_t n = 8 * kQkK;
  std::vector<float> x = random_floats(rng_, n, 3.0f);
  for (int64_t i = kQkK; i < 2 * kQkK; ++i) x[size_t(i)] = 0.0f;
  // A scale of 1 (largest magnitude 127): each product is its value, half of them ties.
  for (int64_t i = 2 * kQkK; i < 3 * kQkK; ++i) x[size_t(i)] = float(i % 253 - 126) + (i % 2 ? 0.5f : 0.0f);
  x[size_t(2 * kQkK + 17)] = -127.0f;
  x[size_t(3 * kQkK + 7)] = -9.0f;
  x[size_t(4 * kQkK + 200)] = 9.0f;
  x[size_t(5 * kQkK + 3)] = -9.0f;
  x[size_t(5 * kQkK + 100)] = 9.0f;
  x[size_t(6 * kQkK + 100)] = 9.0f;
  x[size_t(6 * kQkK + 3)] = -9.0f;
  for (int64_t i = 7 * kQkK; i < 8 * kQkK; ++i) x[size_t(i)] *= i % 2 ? 1e-30f : 1e30f;
  std::vector<quant::BlockQ8_K> ref(size_t(n / kQkK)), simd(ref.size());
  std::memset(simd.data(), 0x55, simd.size() * sizeof(quant::BlockQ8_K));
  quant::quantize_row_q8_K(x.data(), ref.data(), n);
  simd_->quantize_row_q8_K(x.data(), simd.data(), n);
  for (size_t b = 0; b < ref.size(); ++b)
    EXPECT_EQ(std::memcmp(&ref[b], &simd[b], sizeof(quant::BlockQ8_K)), 0) << "block " << b;
}

TEST(KquantMatmulTest, EveryLevelPrefersTheInterleavedLayouts) {
  for (Isa isa : kAllLevels) {
    const KernelTable* table = kernels_for(isa);
    if (table == nullptr) continue;
    for (const KquantType& type : kKquantTypes) {
      EXPECT_EQ(table->layouts[size_t(type.plain)][0], type.packed) << isa_name(isa) << " " << type.name;
      EXPECT_NE(table->matmul_for(type.packed).q8_K, nullptr) << isa_name(isa) << " " << type.name;
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
