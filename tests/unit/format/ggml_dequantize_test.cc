// The ggml type -> dequantizer table: which types it reads, that each id reaches its own format's dequantizer (one
// hand-made block per type with a value only that format gives), and the refusal of a type it cannot read.
#include "format/ggml_dequantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/half.h"

namespace pagoda::format {
namespace {

// A zeroed block of `type`; each case sets the fields it needs.
std::vector<uint8_t> unit_block(GgmlType type) {
  std::vector<uint8_t> block(ggml_type_size(type), 0);
  return block;
}

void set_u16(std::vector<uint8_t>& b, size_t offset, uint16_t v) { std::memcpy(b.data() + offset, &v, 2); }

std::vector<float> dequantize(GgmlType type, const std::vector<uint8_t>& block) {
  std::vector<float> y(ggml_block_size(type));
  dequantize_ggml_row(type, block.data(), y.data(), int64_t(y.size()));
  return y;
}

TEST(GgmlDequantizeTest, WhichTypes) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ2_K,
                     GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL,
                     GgmlType::kIQ4_XS, GgmlType::kMXFP4, GgmlType::kQ4_1, GgmlType::kQ5_1}) {
    EXPECT_TRUE(ggml_type_has_dequantizer(t));
    EXPECT_FALSE(ggml_type_converted_at_load(t)) << "runs as stored";
  }
  for (GgmlType t : {GgmlType::kQ8_K}) {
    EXPECT_TRUE(ggml_type_has_dequantizer(t)) << ggml_type_name(t);
    EXPECT_TRUE(ggml_type_converted_at_load(t)) << ggml_type_name(t);
    EXPECT_TRUE(ggml_type_is_supported(t)) << "the reader maps " << ggml_type_name(t);
  }
  for (GgmlType t : {GgmlType::kTQ1_0, GgmlType::kTQ2_0, GgmlType::kIQ3_XXS, GgmlType::kIQ3_S, GgmlType::kIQ1_S,
                     GgmlType::kIQ1_M, GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S, GgmlType::kQ5_0}) {
    EXPECT_TRUE(ggml_type_has_dequantizer(t)) << ggml_type_name(t);
    EXPECT_FALSE(ggml_type_converted_at_load(t)) << "re-encoded for a carrier instead: " << ggml_type_name(t);
    EXPECT_TRUE(ggml_type_is_supported(t)) << ggml_type_name(t);
  }
  for (GgmlType t : {GgmlType::kNVFP4, GgmlType::kQ1_0, GgmlType::kPagodaInt8}) {
    EXPECT_FALSE(ggml_type_has_dequantizer(t)) << ggml_type_name(t);
    EXPECT_FALSE(ggml_type_converted_at_load(t)) << ggml_type_name(t);
  }
}

TEST(GgmlDequantizeTest, EachTypeReachesItsFormat) {
  // An all-zero quant block with d = 1 gives each format's value of quant 0: q4_1/q5_1 (with m = 0) 0, q5_0 -16,
  // iq4_nl -127, q3_K (scale 0 - 32, quant 0 - 4) 128, q6_K (scale 0) 0 but with scale 1: -32.
  std::vector<uint8_t> q5_0 = unit_block(GgmlType::kQ5_0);
  set_u16(q5_0, 0, 0x3c00);
  EXPECT_EQ(dequantize(GgmlType::kQ5_0, q5_0)[0], -16.0f);
  std::vector<uint8_t> q4_1 = unit_block(GgmlType::kQ4_1);
  set_u16(q4_1, 0, 0x3c00);
  set_u16(q4_1, 2, 0x4000);  // m = 2
  q4_1[4] = 0x53;            // element 0: 3, element 16: 5
  EXPECT_EQ(dequantize(GgmlType::kQ4_1, q4_1)[0], 5.0f);
  EXPECT_EQ(dequantize(GgmlType::kQ4_1, q4_1)[16], 7.0f);
  std::vector<uint8_t> q5_1 = unit_block(GgmlType::kQ5_1);
  set_u16(q5_1, 0, 0x3c00);
  q5_1[4] = 1;  // element 0's fifth bit
  EXPECT_EQ(dequantize(GgmlType::kQ5_1, q5_1)[0], 16.0f);
  std::vector<uint8_t> iq4 = unit_block(GgmlType::kIQ4_NL);
  set_u16(iq4, 0, 0x3c00);
  EXPECT_EQ(dequantize(GgmlType::kIQ4_NL, iq4)[0], -127.0f);
  std::vector<uint8_t> q3k = unit_block(GgmlType::kQ3_K);
  set_u16(q3k, 108, 0x3c00);
  EXPECT_EQ(dequantize(GgmlType::kQ3_K, q3k)[0], 128.0f);
  std::vector<uint8_t> q6k = unit_block(GgmlType::kQ6_K);
  set_u16(q6k, 208, 0x3c00);
  q6k[192] = 1;  // scale of sub-block 0
  EXPECT_EQ(dequantize(GgmlType::kQ6_K, q6k)[0], -32.0f);
  EXPECT_EQ(dequantize(GgmlType::kQ6_K, q6k)[16], 0.0f);
  std::vector<uint8_t> q4k = unit_block(GgmlType::kQ4_K);
  set_u16(q4k, 0, 0x3c00);
  set_u16(q4k, 2, 0x3c00);
  q4k[4] = 3;      // sub-block 0's scale
  q4k[8] = 2;      // sub-block 0's min
  q4k[16] = 0x0f;  // element 0: 15
  EXPECT_EQ(dequantize(GgmlType::kQ4_K, q4k)[0], 43.0f);
  std::vector<uint8_t> q5k = unit_block(GgmlType::kQ5_K);
  set_u16(q5k, 0, 0x3c00);
  q5k[4] = 1;
  q5k[16] = 1;  // element 0's fifth bit
  EXPECT_EQ(dequantize(GgmlType::kQ5_K, q5k)[0], 16.0f);
  std::vector<uint8_t> q2k = unit_block(GgmlType::kQ2_K);
  set_u16(q2k, 82, 0x3c00);  // dmin = 1
  q2k[0] = 0x50;             // min 5, scale 0
  EXPECT_EQ(dequantize(GgmlType::kQ2_K, q2k)[0], -5.0f);
  std::vector<uint8_t> q8k = unit_block(GgmlType::kQ8_K);
  const float half = 0.5f;
  std::memcpy(q8k.data(), &half, 4);
  q8k[4] = uint8_t(-6);
  EXPECT_EQ(dequantize(GgmlType::kQ8_K, q8k)[0], -3.0f);
  std::vector<uint8_t> xs = unit_block(GgmlType::kIQ4_XS);
  set_u16(xs, 0, 0x3c00);
  xs[4] = 0x01;  // sub-block 0: ls = 1 -> scale -31
  EXPECT_EQ(dequantize(GgmlType::kIQ4_XS, xs)[0], -31.0f * -127.0f);
  std::vector<uint8_t> fp4 = unit_block(GgmlType::kMXFP4);
  fp4[0] = 128;   // 2^1
  fp4[1] = 0x07;  // element 0: 6
  EXPECT_EQ(dequantize(GgmlType::kMXFP4, fp4)[0], 12.0f);
  std::vector<uint8_t> tq1 = unit_block(GgmlType::kTQ1_0);
  set_u16(tq1, 52, 0x3c00);
  tq1[0] = 242;  // trits 2, 2, 1, 1, 1: elements 0, 32, 64, 96, 128
  EXPECT_EQ(dequantize(GgmlType::kTQ1_0, tq1)[32], 1.0f);
  EXPECT_EQ(dequantize(GgmlType::kTQ1_0, tq1)[64], 0.0f);
  EXPECT_EQ(dequantize(GgmlType::kTQ1_0, tq1)[1], -1.0f);
  std::vector<uint8_t> tq2 = unit_block(GgmlType::kTQ2_0);
  set_u16(tq2, 64, 0x4000);  // d = 2
  tq2[0] = 0x02;             // element 0: q 2
  EXPECT_EQ(dequantize(GgmlType::kTQ2_0, tq2)[0], 2.0f);
  EXPECT_EQ(dequantize(GgmlType::kTQ2_0, tq2)[32], -2.0f);
  std::vector<uint8_t> f16 = {0x00, 0xc0};
  EXPECT_EQ(dequantize(GgmlType::kF16, f16)[0], -2.0f);
}

TEST(GgmlDequantizeDeathTest, RefusesTypesWithoutDequantizer) {
  std::vector<uint8_t> block(144, 0);
  std::vector<float> y(256);
  EXPECT_DEATH(dequantize_ggml_row(GgmlType::kNVFP4, block.data(), y.data(), 256),
               "no dequantizer for ggml type nvfp4");
}

}  // namespace
}  // namespace pagoda::format
