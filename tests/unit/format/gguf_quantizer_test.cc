// quantize_gguf on the bundled model: which tensors get quantized, that the written blocks are exactly the
// block quantizer's bytes (read back bit-exactly), that metadata survives, and the error cases.
#include "format/gguf_quantizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "format/gguf_reader.h"
#include "quant/block_awq_int4.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"
#include "quant/row_int8.h"
#include "support/temp_dir_test.h"

namespace pagoda::format {
namespace {

class GgufQuantizerTest : public testing_support::TempDirTest {};

using ::testing::HasSubstr;

TEST_F(GgufQuantizerTest, QuantizesWholeBlockMatricesAndReadsBackBitExactly) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const std::string out = path("quantized.gguf");
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

TEST_F(GgufQuantizerTest, TypeForEachShape) {
  const GgmlType f32 = GgmlType::kF32;
  EXPECT_EQ(quantized_type_for({64, 172}, f32, GgmlType::kQ4_0), GgmlType::kQ4_0);
  EXPECT_EQ(quantized_type_for({172, 64}, f32, GgmlType::kQ4_0), f32);
  EXPECT_EQ(quantized_type_for({64}, f32, GgmlType::kQ8_0), f32);     // norms stay
  EXPECT_EQ(quantized_type_for({64, 1}, f32, GgmlType::kQ8_0), f32);  // a one-row gate vector stays, as llama.cpp
  EXPECT_EQ(quantized_type_for({172, 64}, GgmlType::kF16, GgmlType::kPagodaInt8), GgmlType::kPagodaInt8);
  EXPECT_EQ(quantized_type_for({256, 8}, f32, GgmlType::kPagodaAwqInt4G128), GgmlType::kPagodaAwqInt4G128);
  EXPECT_EQ(quantized_type_for({64, 8}, f32, GgmlType::kPagodaAwqInt4G128), GgmlType::kPagodaAwqInt4G64);
  EXPECT_EQ(quantized_type_for({96, 8}, f32, GgmlType::kPagodaAwqInt4G128), GgmlType::kPagodaAwqInt4G32);
  EXPECT_EQ(quantized_type_for({256, 8}, f32, GgmlType::kPagodaAwqInt4G32), GgmlType::kPagodaAwqInt4G32);
  EXPECT_EQ(quantized_type_for({172, 8}, f32, GgmlType::kPagodaAwqInt4G32), f32);
  EXPECT_EQ(quantized_type_for({64, 8}, GgmlType::kQ8_0, GgmlType::kPagodaInt8), GgmlType::kQ8_0);
}

TEST_F(GgufQuantizerTest, Int8QuantizesEveryMatrixRowByRow) {
  const std::string out = path("int8.gguf");
  auto report = quantize_gguf({PAGODA_TEST_BUNDLED_MODEL, out, GgmlType::kPagodaInt8, nullptr});
  ASSERT_TRUE(report.ok()) << report.error();
  auto src = GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  auto dst = GgufFile::open(out);
  ASSERT_TRUE(src.ok() && dst.ok());
  ASSERT_EQ(dst->tensors().size(), src->tensors().size());
  int32_t num_quantized = 0;
  for (size_t i = 0; i < src->tensors().size(); ++i) {
    const GgufTensorInfo& s = src->tensors()[i];
    const GgufTensorInfo& d = dst->tensors()[i];
    ASSERT_EQ(d.name, s.name);
    if (s.dims.size() != 2) {
      EXPECT_EQ(d.type, s.type) << s.name;
      continue;
    }
    ++num_quantized;
    ASSERT_EQ(d.type, GgmlType::kPagodaInt8) << s.name;
    const int64_t row_len = s.dims[0];
    std::vector<uint8_t> expected(size_t(s.dims[1] * quant::int8_row_bytes(row_len)));
    for (int64_t r = 0; r < s.dims[1]; ++r)
      quant::quantize_row_int8(static_cast<const float*>(s.data) + r * row_len,
                               expected.data() + r * quant::int8_row_bytes(row_len), row_len);
    ASSERT_EQ(d.size_bytes, expected.size());
    EXPECT_EQ(std::memcmp(d.data, expected.data(), expected.size()), 0) << s.name;
  }
  EXPECT_EQ(num_quantized, 1 + 5 * 7);  // 172-wide ffn_down rows too: INT8 has no blocks
}

TEST_F(GgufQuantizerTest, AwqFallsBackToGroupsThatFitAndWritesInputScales) {
  auto src = GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_TRUE(src.ok());
  // Synthetic statistics for one weight: channel 5 carries large activations.
  const GgufTensorInfo* q = src->find_tensor("blk.1.attn_q.weight");
  ASSERT_NE(q, nullptr);
  quant::LinearInputStats stats;
  stats.num_in = 64;
  stats.num_rows_seen = 8;
  stats.mean_abs.assign(64, 1.0f);
  stats.mean_abs[5] = 30.0f;
  for (int64_t n = 0; n < 8; ++n)
    for (int64_t c = 0; c < 64; ++c) stats.samples.push_back(c == 5 ? 30.0f : (c + n) % 3 == 0 ? -1.0f : 1.0f);
  const CalibrationStats calibration{{"blk.1.attn_q.weight", stats}};

  const std::string out = path("awq.gguf");
  QuantizeOptions options{PAGODA_TEST_BUNDLED_MODEL, out, GgmlType::kPagodaAwqInt4G128, nullptr, &calibration};
  auto report = quantize_gguf(options);
  ASSERT_TRUE(report.ok()) << report.error();
  auto dst = GgufFile::open(out);
  ASSERT_TRUE(dst.ok());
  EXPECT_EQ(dst->tensors().size(), src->tensors().size() + 1);
  for (const GgufTensorInfo& s : src->tensors()) {
    const GgufTensorInfo* d = dst->find_tensor(s.name);
    ASSERT_NE(d, nullptr) << s.name;
    if (s.dims.size() != 2 || s.dims[0] == 172) {
      EXPECT_EQ(d->type, s.type) << s.name;  // norms, and ffn_down: 172 is no multiple of 32
      continue;
    }
    EXPECT_EQ(d->type, GgmlType::kPagodaAwqInt4G64) << s.name;  // 64-wide rows: 128 does not fit, 64 does
    if (s.name == "blk.1.attn_q.weight") continue;
    std::vector<uint8_t> expected(d->size_bytes);
    quant::quantize_row_awq_int4(static_cast<const float*>(s.data), expected.data(), s.num_elements(), 64);
    EXPECT_EQ(std::memcmp(d->data, expected.data(), expected.size()), 0) << s.name;
    EXPECT_EQ(dst->find_tensor(awq_input_scale_name(s.name)), nullptr) << s.name;
  }
  // The calibrated weight: Q(clip(W diag(s))) and s^-1 stored next to it, with s the search's choice.
  const std::vector<float> w(static_cast<const float*>(q->data), static_cast<const float*>(q->data) + 64 * 64);
  const quant::AwqScales found = quant::search_awq_scales(w.data(), 64, 64, 64, stats);
  EXPECT_GT(found.alpha, 0.0f);
  const GgufTensorInfo* inv = dst->find_tensor("blk.1.attn_q.input_scale");
  ASSERT_NE(inv, nullptr);
  ASSERT_EQ(inv->type, GgmlType::kF32);
  ASSERT_EQ(inv->dims, std::vector<int64_t>{64});
  for (int64_t c = 0; c < 64; ++c) EXPECT_EQ(static_cast<const float*>(inv->data)[c], 1.0f / found.scales[size_t(c)]);
  const std::vector<float> scaled = quant::clip_awq_groups(w.data(), 64, 64, 64, found.scales, stats);
  std::vector<uint8_t> expected(dst->find_tensor("blk.1.attn_q.weight")->size_bytes);
  quant::quantize_row_awq_int4(scaled.data(), expected.data(), 64 * 64, 64);
  EXPECT_EQ(std::memcmp(dst->find_tensor("blk.1.attn_q.weight")->data, expected.data(), expected.size()), 0);
  bool reported = false;
  for (const QuantizedTensorReport& r : report->tensors)
    if (r.name == "blk.1.attn_q.weight") {
      reported = r.has_awq_scale;
      EXPECT_EQ(r.awq_alpha, found.alpha);
      EXPECT_LT(r.awq_mse_scaled, r.awq_mse_unscaled);
      EXPECT_LE(r.awq_mse, r.awq_mse_scaled * (1.0 + 1e-6));
    }
  EXPECT_TRUE(reported);

  // Statistics of the wrong width are an error, not a silent skip.
  quant::LinearInputStats narrow = stats;
  narrow.num_in = 32;
  const CalibrationStats bad{{"blk.1.attn_q.weight", narrow}};
  QuantizeOptions bad_options{PAGODA_TEST_BUNDLED_MODEL, out, GgmlType::kPagodaAwqInt4G32, nullptr, &bad};
  auto mismatch = quantize_gguf(bad_options);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(mismatch.error(), HasSubstr("blk.1.attn_q.weight"));
}

TEST_F(GgufQuantizerTest, Errors) {
  const std::string out = path("q.gguf");
  auto bad_type = quantize_gguf({PAGODA_TEST_BUNDLED_MODEL, out, GgmlType::kQ4_1, nullptr});
  ASSERT_FALSE(bad_type.ok());
  EXPECT_THAT(bad_type.error(), HasSubstr("cannot quantize to q4_1"));

  auto missing = quantize_gguf({"/nonexistent/model.gguf", out, GgmlType::kQ8_0, nullptr});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("/nonexistent/model.gguf"));

  const std::string q8 = path("q8.gguf");
  ASSERT_TRUE(quantize_gguf({PAGODA_TEST_BUNDLED_MODEL, q8, GgmlType::kQ8_0, nullptr}).ok());
  auto requantize = quantize_gguf({q8, out, GgmlType::kQ4_0, nullptr});
  ASSERT_FALSE(requantize.ok());
  EXPECT_THAT(requantize.error(), HasSubstr("is already q8_0"));
}

}  // namespace
}  // namespace pagoda::format
