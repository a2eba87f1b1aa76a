// quantize_gguf on the bundled model: which tensors get quantized, that the written blocks are exactly the
// block quantizer's bytes (read back bit-exactly), that metadata survives, and the error cases.
#include "format/gguf_quantizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "format/gguf_reader.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"

namespace pagoda::format {
namespace {

using ::testing::HasSubstr;

TEST(GgufQuantizerTest, QuantizesWholeBlockMatricesAndReadsBackBitExactly) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const std::string out = ::testing::TempDir() + "quantized.gguf";
    auto report = quantize_gguf({PAGODA_TEST_BUNDLED_MODEL, out, type, nullptr});
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_LT(report->file_bytes_after, report->file_bytes_before / 2);

    auto src = GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
    auto dst = GgufFile::open(out);
    ASSERT_TRUE(src.ok() && dst.ok());
    ASSERT_EQ(dst->tensors().size(), src->tensors().size());
    EXPECT_EQ(dst->get_u32("general.file_type")->value(), type == GgmlType::kQ4_0 ? 2u : 7u);
    EXPECT_EQ(dst->get_string_array("tokenizer.ggml.tokens")->value(),
              src->get_string_array("tokenizer.ggml.tokens")->value());
    int32_t num_quantized = 0;
    for (size_t i = 0; i < src->tensors().size(); ++i) {
      const GgufTensorInfo& s = src->tensors()[i];
      const GgufTensorInfo& d = dst->tensors()[i];
      ASSERT_EQ(d.name, s.name);
      ASSERT_EQ(d.dims, s.dims);
      const bool should_quantize = s.dims.size() == 2 && s.dims[0] % 32 == 0;
      ASSERT_EQ(d.type, should_quantize ? type : s.type) << s.name;
      ASSERT_EQ(report->tensors[i].to, d.type);
      std::vector<uint8_t> expected(s.size_bytes);
      if (should_quantize) {
        ++num_quantized;
        expected.resize(d.size_bytes);
        if (type == GgmlType::kQ8_0)
          quant::quantize_row_q8_0(static_cast<const float*>(s.data),
                                   reinterpret_cast<quant::BlockQ8_0*>(expected.data()), s.num_elements());
        else
          quant::quantize_row_q4_0(static_cast<const float*>(s.data),
                                   reinterpret_cast<quant::BlockQ4_0*>(expected.data()), s.num_elements());
      } else {
        std::memcpy(expected.data(), s.data, s.size_bytes);
      }
      ASSERT_EQ(d.size_bytes, expected.size());
      EXPECT_EQ(std::memcmp(d.data, expected.data(), expected.size()), 0) << s.name;
    }
    // token_embd and q, k, v, output, gate and up of the 5 layers; ffn_down rows are 172 wide.
    EXPECT_EQ(num_quantized, 1 + 5 * 6);
  }
}

TEST(GgufQuantizerTest, Errors) {
  const std::string out = ::testing::TempDir() + "q.gguf";
  auto bad_type = quantize_gguf({PAGODA_TEST_BUNDLED_MODEL, out, GgmlType::kQ4_1, nullptr});
  ASSERT_FALSE(bad_type.ok());
  EXPECT_THAT(bad_type.error(), HasSubstr("cannot quantize to q4_1"));

  auto missing = quantize_gguf({"/nonexistent/model.gguf", out, GgmlType::kQ8_0, nullptr});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("/nonexistent/model.gguf"));

  const std::string q8 = ::testing::TempDir() + "q8.gguf";
  ASSERT_TRUE(quantize_gguf({PAGODA_TEST_BUNDLED_MODEL, q8, GgmlType::kQ8_0, nullptr}).ok());
  auto requantize = quantize_gguf({q8, out, GgmlType::kQ4_0, nullptr});
  ASSERT_FALSE(requantize.ok());
  EXPECT_THAT(requantize.error(), HasSubstr("is already q8_0"));
}

}  // namespace
}  // namespace pagoda::format
