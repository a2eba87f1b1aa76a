// Tests for the GGUF/ggml type tables: names, block layouts, row sizes and the GgufValue factories.
#include "format/gguf_types.h"

#include <gtest/gtest.h>

namespace pagoda::format {
namespace {

TEST(GgufTypesTest, TypeNames) {
  EXPECT_EQ(ggml_type_name(GgmlType::kF32), "f32");
  EXPECT_EQ(ggml_type_name(GgmlType::kBF16), "bf16");
  EXPECT_EQ(ggml_type_name(GgmlType::kQ4_0), "q4_0");
  EXPECT_EQ(ggml_type_name(GgmlType::kQ6_K), "q6_K");
  EXPECT_EQ(ggml_type_name(static_cast<GgmlType>(99)), "unknown");
  EXPECT_EQ(gguf_value_type_name(GgufValueType::kArray), "array");
  EXPECT_EQ(gguf_value_type_name(GgufValueType::kFloat64), "f64");
  EXPECT_EQ(gguf_value_type_name(static_cast<GgufValueType>(13)), "unknown");
}

TEST(GgufTypesTest, SupportedTypesAndRowBytes) {
  EXPECT_TRUE(ggml_type_is_supported(GgmlType::kF32));
  EXPECT_TRUE(ggml_type_is_supported(GgmlType::kF16));
  EXPECT_TRUE(ggml_type_is_supported(GgmlType::kBF16));
  EXPECT_TRUE(ggml_type_is_supported(GgmlType::kQ8_0));
  EXPECT_TRUE(ggml_type_is_supported(GgmlType::kQ4_0));
  // Run as stored, or converted or re-encoded at load (format/ggml_dequantize.h, ggml_carrier.h).
  for (GgmlType t : {GgmlType::kQ4_1,   GgmlType::kQ5_0,  GgmlType::kQ5_1,  GgmlType::kQ2_K,    GgmlType::kQ3_K,
                     GgmlType::kQ4_K,   GgmlType::kQ5_K,  GgmlType::kQ6_K,  GgmlType::kQ8_K,    GgmlType::kIQ4_NL,
                     GgmlType::kIQ4_XS, GgmlType::kMXFP4, GgmlType::kTQ1_0, GgmlType::kTQ2_0,   GgmlType::kIQ3_XXS,
                     GgmlType::kIQ3_S,  GgmlType::kIQ1_S, GgmlType::kIQ1_M, GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS,
                     GgmlType::kIQ2_S})
    EXPECT_TRUE(ggml_type_is_supported(t)) << ggml_type_name(t);
  // Known (named in messages) but refused.
  for (GgmlType t :
       {GgmlType::kQ8_1, GgmlType::kNVFP4, GgmlType::kQ1_0, GgmlType::kQ2_0, GgmlType::kF64, GgmlType::kI8}) {
    EXPECT_TRUE(ggml_type_is_known(t)) << ggml_type_name(t);
    EXPECT_FALSE(ggml_type_is_supported(t)) << ggml_type_name(t);
  }
  EXPECT_TRUE(ggml_type_is_known(GgmlType::kQ8_0));
  EXPECT_FALSE(ggml_type_is_known(static_cast<GgmlType>(4)));  // q4_2, removed from ggml
  EXPECT_EQ(ggml_row_bytes(GgmlType::kF32, 7), 28u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kF16, 7), 14u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kBF16, 7), 14u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kQ4_0, 64), 36u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kQ8_0, 32), 34u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kQ4_0, 33), 0u);  // not whole blocks
  EXPECT_EQ(ggml_row_bytes(GgmlType::kQ4_1, 32), 20u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kNVFP4, 256), 0u);              // not loadable
  EXPECT_EQ(ggml_row_bytes(GgmlType::kF32, uint64_t{1} << 62), 0u);  // overflow
  EXPECT_EQ(ggml_block_size(GgmlType::kQ4_0), 32u);
  EXPECT_EQ(ggml_type_size(GgmlType::kQ4_0), 18u);
  EXPECT_EQ(ggml_block_size(GgmlType::kQ4_K), 256u);
  EXPECT_EQ(ggml_type_size(GgmlType::kQ4_K), 144u);
}

TEST(GgufTypesTest, EveryGgmlTypesLayout) {
  // ggml's type_traits (blck_size, type_size) and names, written out from ggml-common.h's block structs.
  struct Row {
    GgmlType type;
    const char* name;
    uint64_t block, bytes;
  };
  const Row rows[] = {
      {GgmlType::kQ4_1, "q4_1", 32, 20},       {GgmlType::kQ5_0, "q5_0", 32, 22},
      {GgmlType::kQ5_1, "q5_1", 32, 24},       {GgmlType::kQ8_1, "q8_1", 32, 36},
      {GgmlType::kQ2_K, "q2_K", 256, 84},      {GgmlType::kQ3_K, "q3_K", 256, 110},
      {GgmlType::kQ5_K, "q5_K", 256, 176},     {GgmlType::kQ6_K, "q6_K", 256, 210},
      {GgmlType::kQ8_K, "q8_K", 256, 292},     {GgmlType::kIQ2_XXS, "iq2_xxs", 256, 66},
      {GgmlType::kIQ2_XS, "iq2_xs", 256, 74},  {GgmlType::kIQ3_XXS, "iq3_xxs", 256, 98},
      {GgmlType::kIQ1_S, "iq1_s", 256, 50},    {GgmlType::kIQ4_NL, "iq4_nl", 32, 18},
      {GgmlType::kIQ3_S, "iq3_s", 256, 110},   {GgmlType::kIQ2_S, "iq2_s", 256, 82},
      {GgmlType::kIQ4_XS, "iq4_xs", 256, 136}, {GgmlType::kIQ1_M, "iq1_m", 256, 56},
      {GgmlType::kTQ1_0, "tq1_0", 256, 54},    {GgmlType::kTQ2_0, "tq2_0", 256, 66},
      {GgmlType::kMXFP4, "mxfp4", 32, 17},     {GgmlType::kNVFP4, "nvfp4", 64, 36},
      {GgmlType::kQ1_0, "q1_0", 128, 18},      {GgmlType::kQ2_0, "q2_0", 64, 18},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(ggml_type_name(r.type), r.name);
    EXPECT_EQ(ggml_block_size(r.type), r.block) << r.name;
    EXPECT_EQ(ggml_type_size(r.type), r.bytes) << r.name;
  }
}

TEST(GgufTypesTest, PagodaTypes) {
  EXPECT_EQ(ggml_type_name(GgmlType::kPagodaInt8), "int8");
  EXPECT_EQ(ggml_type_name(GgmlType::kPagodaAwqInt4G128), "awq_int4_g128");
  for (GgmlType t : {GgmlType::kPagodaInt8, GgmlType::kPagodaAwqInt4G32, GgmlType::kPagodaAwqInt4G64,
                     GgmlType::kPagodaAwqInt4G128}) {
    EXPECT_TRUE(ggml_type_is_known(t));
    EXPECT_TRUE(ggml_type_is_supported(t));
    EXPECT_GE(static_cast<uint32_t>(t), 1000u) << "clear of ggml's ids";
  }
  // INT8 rows: a 4-byte f32 scale, then one byte per value, any length.
  EXPECT_EQ(ggml_row_bytes(GgmlType::kPagodaInt8, 172), 176u);
  EXPECT_EQ(ggml_row_header_bytes(GgmlType::kPagodaInt8), 4u);
  EXPECT_EQ(ggml_row_header_bytes(GgmlType::kQ8_0), 0u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kPagodaAwqInt4G32, 64), 40u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kPagodaAwqInt4G64, 128), 72u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kPagodaAwqInt4G128, 256), 136u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::kPagodaAwqInt4G64, 96), 0u);  // not whole groups
  EXPECT_EQ(awq_input_scale_name("blk.3.ffn_up.weight"), "blk.3.ffn_up.input_scale");
}

TEST(GgufTypesTest, Factories) {
  EXPECT_EQ(GgufValue::u32(7).type, GgufValueType::kUint32);
  EXPECT_EQ(GgufValue::u32(7).u64, 7u);
  EXPECT_EQ(GgufValue::i32(-7).i64, -7);
  EXPECT_EQ(GgufValue::boolean(true).u64, 1u);
  EXPECT_EQ(GgufValue::f32(0.5f).f64, 0.5);
  const GgufValue a = GgufValue::string_array({"a", "b"});
  EXPECT_EQ(a.type, GgufValueType::kArray);
  EXPECT_EQ(a.array_type, GgufValueType::kString);
  ASSERT_EQ(a.array.size(), 2u);
  EXPECT_EQ(a.array[1].str, "b");
  const GgufValue nested = GgufValue::array_of(GgufValueType::kArray, {GgufValue::i32_array({1, 2})});
  EXPECT_EQ(nested.array[0].array[1].i64, 2);
  EXPECT_EQ(nested, GgufValue::array_of(GgufValueType::kArray, {GgufValue::i32_array({1, 2})}));
}

}  // namespace
}  // namespace pagoda::format
