// The 4-bit codebook matmuls (IQ4_NL, IQ4_XS, MXFP4, stored and 8-row interleaved), IQ4_NL and MXFP4 against Q8_0
// activations and IQ4_XS against q8_K ones (ggml's vec_dot_type for each): the stored and the interleaved reference
// give the same bits; every SIMD level gives the reference's bits on random shapes (token tails, row tiles, row
// slices as a thread pool cuts them, both entry points, extreme levels and scales, MXFP4's subnormal ones included);
// the reference is the product of ggml's dequantized weights with the quantized activations up to f32 rounding; and
// IQ4_XS's reference is ggml's integer arithmetic of vec_dot_iq4_xs_q8_K (written out here from the stored bits),
// bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_iq4_x8.h"
#include "quant/block_q8_K.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

struct CodebookType {
  const char* name;
  DType plain, packed;
  int64_t block_values, block_bytes;
  bool e8m0;  // MXFP4: a one-byte exponent at offset 0; else an fp16 d there
  bool q8_K;  // reads q8_K activations (IQ4_XS, as ggml's); else Q8_0
  void (*dequantize)(const void* blocks, float* y, int64_t n);
  void (*repack)(const void* src, void* dst, int64_t num_rows, int64_t num_blocks);
};

const CodebookType kCodebookTypes[] = {
    {"iq4_nl", DType::kIQ4_NL, DType::kIQ4_NLx8, 32, sizeof(quant::BlockIQ4_NL), false, false,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_iq4_nl(static_cast<const quant::BlockIQ4_NL*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_iq4_nlx8(static_cast<const quant::BlockIQ4_NL*>(s), static_cast<quant::BlockIQ4_NLx8*>(d), r, n);
     }},
    {"iq4_xs", DType::kIQ4_XS, DType::kIQ4_XSx8, 256, sizeof(quant::BlockIQ4_XS), false, true,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_iq4_xs(static_cast<const quant::BlockIQ4_XS*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_iq4_xsx8(static_cast<const quant::BlockIQ4_XS*>(s), static_cast<quant::BlockIQ4_XSx8*>(d), r, n);
     }},
    {"mxfp4", DType::kMXFP4, DType::kMXFP4x8, 32, sizeof(quant::BlockMXFP4), true, false,
     [](const void* b, float* y, int64_t n) {
       quant::dequantize_row_mxfp4(static_cast<const quant::BlockMXFP4*>(b), y, n);
     },
     [](const void* s, void* d, int64_t r, int64_t n) {
       quant::repack_mxfp4x8(static_cast<const quant::BlockMXFP4*>(s), static_cast<quant::BlockMXFP4x8*>(d), r, n);
     }},
};

// x through the type's activation form and back: what its kernels multiply.
std::vector<float> activation_round_trip(const CodebookType& type, const std::vector<float>& x) {
  if (!type.q8_K) return q8_0_round_trip(x);
  std::vector<quant::BlockQ8_K> blocks(x.size() / quant::kQK_K);
  std::vector<float> out(x.size());
  quant::quantize_row_q8_K(x.data(), blocks.data(), int64_t(x.size()));
  quant::dequantize_row_q8_K(blocks.data(), out.data(), int64_t(x.size()));
  return out;
}

struct CodebookWeights {
  std::vector<uint8_t> plain, packed;
};

// num_out rows of random blocks: random bytes, fp16 scales of either sign in [2^-10, 2^-6) or MXFP4 exponents
// 2^-10 .. 2^-7; `fill` >= 0 sets every byte but the scales to it instead, and `exponents` (MXFP4) the exponents
// in turn from its list.
CodebookWeights make_weights(const CodebookType& type, std::mt19937& rng, int64_t num_out, int64_t num_in,
                             int fill = -1, const std::vector<uint8_t>& exponents = {}) {
  const int64_t num_blocks = num_out * num_in / type.block_values;
  CodebookWeights w;
  w.plain.resize(size_t(num_blocks * type.block_bytes));
  for (uint8_t& b : w.plain) b = fill >= 0 ? uint8_t(fill) : uint8_t(rng());
  std::uniform_real_distribution<float> scale(1.0f / 1024, 1.0f / 64);
  for (int64_t b = 0; b < num_blocks; ++b) {
    uint8_t* block = w.plain.data() + b * type.block_bytes;
    if (type.e8m0) {
      block[0] = exponents.empty() ? uint8_t(118 + rng() % 4) : exponents[size_t(b) % exponents.size()];
    } else {
      const uint16_t d = float_to_fp16(rng() % 2 ? scale(rng) : -scale(rng));
      std::memcpy(block, &d, 2);
    }
  }
  w.packed.resize(size_t(num_out * dtype_row_bytes(type.packed, num_in)));
  type.repack(w.plain.data(), w.packed.data(), num_out, num_in / type.block_values);
  return w;
}

TEST(CodebookMatmulTest, StoredAndInterleavedReferencesGiveTheSameBits) {
  std::mt19937 rng(3);
  const int64_t num_in = 512, num_out = 24, num_tokens = 3;
  for (const CodebookType& type : kCodebookTypes) {
    const CodebookWeights w = make_weights(type, rng, num_out, num_in);
    const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
    std::vector<float> y_plain(size_t(num_tokens * num_out)), y_packed(y_plain.size());
    const KernelTable& scalar = *kernels_for(Isa::kScalar);
    scalar.matmul_for(type.plain).f32(w.plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
    scalar.matmul_for(type.packed).f32(w.packed.data(), x.data(), y_packed.data(), num_out, num_in, num_tokens);
    EXPECT_EQ(std::memcmp(y_plain.data(), y_packed.data(), y_plain.size() * sizeof(float)), 0) << type.name;
  }
}

TEST(CodebookMatmulTest, ReferenceIsTheProductOfTheDequantizedWeights) {
  std::mt19937 rng(5);
  const int64_t num_in = 768, num_out = 16, num_tokens = 2;
  for (const CodebookType& type : kCodebookTypes) {
    const CodebookWeights w = make_weights(type, rng, num_out, num_in);
    const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
    std::vector<float> wf(size_t(num_out * num_in));
    type.dequantize(w.plain.data(), wf.data(), num_out * num_in);
    const std::vector<float> xr = activation_round_trip(type, x);
    std::vector<float> y(size_t(num_tokens * num_out));
    kernels_for(Isa::kScalar)
        ->matmul_for(type.plain)
        .f32(w.plain.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    expect_near_exact_products(y, wf, xr, num_out, num_in, num_tokens, type.name);
  }
}

class CodebookSimdTest : public SimdLevelTest {
 protected:
  std::mt19937 rng_{31};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(CodebookSimdTest);

TEST_P(CodebookSimdTest, MatchesScalarBitForBit) {
  for (const CodebookType& type : kCodebookTypes) {
    // 2880 inputs (gpt-oss's width: 90 MXFP4 blocks) where the type allows it; 200 rows: an odd number of groups.
    for (int64_t num_in : {256, 512, type.block_values == 32 ? 2880 : 2048}) {
      for (int64_t num_out : {8, 16, 40, 200}) {
        for (int64_t num_tokens : {1, 2, 3, 4, 5, 8, 9, 12, 19}) {
          const CodebookWeights w = make_weights(type, rng_, num_out, num_in);
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

TEST_P(CodebookSimdTest, ExtremeLevelsAndScalesStayExact) {
  // Every quant byte 0x00 (IQ4 level -127, IQ4_XS sub-scale -32), 0xff (113, sub-scale 31) or 0x77 (MXFP4 +-12)
  // against activations of +-127: the largest partial sums the kernels form; MXFP4's exponents 0 and 1 (subnormal
  // scales), 2 and 130.
  const int64_t num_in = 512, num_out = 16, num_tokens = 3;
  std::vector<float> x(size_t(num_tokens * num_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 5) % 3 ? 127.0f : -127.0f;
  for (const CodebookType& type : kCodebookTypes)
    for (int fill : {0x00, 0xff, 0x77}) {
      const CodebookWeights w = make_weights(type, rng_, num_out, num_in, fill, {0, 1, 2, 130});
      std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
      kernels_for(Isa::kScalar)
          ->matmul_for(type.plain)
          .f32(w.plain.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
      simd_->matmul_for(type.packed).f32(w.packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
      ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0)
          << type.name << " fill " << fill;
    }
}

TEST_P(CodebookSimdTest, RowSlicesAndPrequantizedInputGiveTheSameBits) {
  const int64_t num_in = 768, num_out = 48, num_tokens = 11;
  for (const CodebookType& type : kCodebookTypes) {
    const CodebookWeights w = make_weights(type, rng_, num_out, num_in);
    const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 1.0f);
    std::vector<quant::BlockQ8_0> xq(x.size() / kQk);
    std::vector<quant::BlockQ8_K> xqk(x.size() / quant::kQK_K);
    quant::quantize_row_q8_0(x.data(), xq.data(), int64_t(x.size()));
    quant::quantize_row_q8_K(x.data(), xqk.data(), int64_t(x.size()));
    const MatmulKernels& k = simd_->matmul_for(type.packed);
    ASSERT_EQ(k.q8_0 == nullptr, type.q8_K) << type.name;
    ASSERT_EQ(k.q8_K == nullptr, !type.q8_K) << type.name;
    // Token t's quantized rows from `first` on, the one form the type reads.
    const auto run = [&](const uint8_t* w_rows, int64_t rows, int64_t first, int64_t tokens, float* y) {
      if (type.q8_K)
        k.q8_K(w_rows, xqk.data() + first * num_in / quant::kQK_K, y, rows, num_in, tokens, num_out);
      else
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

TEST(CodebookMatmulTest, EveryLevelPrefersTheInterleavedLayouts) {
  for (Isa isa : kAllLevels) {
    const KernelTable* table = kernels_for(isa);
    if (table == nullptr) continue;
    for (const CodebookType& type : kCodebookTypes) {
      EXPECT_EQ(table->layouts[size_t(type.plain)][0], type.packed) << isa_name(isa) << " " << type.name;
      const MatmulKernels& k = table->matmul_for(type.packed);
      EXPECT_TRUE(type.q8_K ? k.q8_K != nullptr : k.q8_0 != nullptr) << isa_name(isa) << " " << type.name;
    }
  }
}

TEST(CodebookMatmulTest, Iq4XsReferenceIsGgmlsVecDotIq4XsQ8K) {
  // ggml's vec_dot_iq4_xs_q8_K from the stored bits: per super-block, sub-block scale ls = 4 bits of scales_l
  // (low nibble for even sub-blocks) and 2 of scales_h, each sub-block's integer sum of level x q8 times ls - 32,
  // summed in int32, then one float step with fp16(d) * d_x; the activations quantized by ggml's
  // quantize_row_q8_K (pinned in tests/unit/quant).
  static constexpr int8_t kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  std::mt19937 rng(17);
  const int64_t num_in = 1024, num_out = 16, num_tokens = 3, num_super = num_in / 256;
  const CodebookWeights w = make_weights(kCodebookTypes[1], rng, num_out, num_in);
  const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
  std::vector<quant::BlockQ8_K> xq(size_t(num_tokens * num_super));
  quant::quantize_row_q8_K(x.data(), xq.data(), num_tokens * num_in);
  const auto* blocks = reinterpret_cast<const quant::BlockIQ4_XS*>(w.plain.data());
  std::vector<float> want(size_t(num_tokens * num_out)), got(want.size()), got_packed(want.size());
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t o = 0; o < num_out; ++o) {
      float sumf = 0.0f;
      for (int64_t b = 0; b < num_super; ++b) {
        const quant::BlockIQ4_XS& blk = blocks[o * num_super + b];
        const quant::BlockQ8_K& y = xq[size_t(t * num_super + b)];
        int32_t sumi = 0;
        for (int ib = 0; ib < 8; ++ib) {
          const int ls = ((blk.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((blk.scales_h >> 2 * ib) & 3) << 4);
          int32_t part = 0;
          for (int j = 0; j < 16; ++j) {
            part += y.qs[32 * ib + j] * kLevels[blk.qs[16 * ib + j] & 0xf];
            part += y.qs[32 * ib + 16 + j] * kLevels[blk.qs[16 * ib + j] >> 4];
          }
          sumi += (ls - 32) * part;
        }
        sumf = std::fma(fp16_to_float(blk.d) * y.d, float(sumi), sumf);
      }
      want[size_t(t * num_out + o)] = sumf;
    }
  const KernelTable& scalar = *kernels_for(Isa::kScalar);
  scalar.matmul_for(DType::kIQ4_XS).f32(w.plain.data(), x.data(), got.data(), num_out, num_in, num_tokens);
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  scalar.matmul_for(DType::kIQ4_XSx8)
      .q8_K(w.packed.data(), xq.data(), got_packed.data(), num_out, num_in, num_tokens, num_out);
  EXPECT_EQ(std::memcmp(want.data(), got_packed.data(), want.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace pagoda::kernels
