// quantize_gguf_llama on the bundled model (rows of 64 and 172: q4_K falls back to q5_0, 172-wide rows to f16) and
// the imatrix reader: the written bytes are the block quantizers' (with and without importance weights), the
// metadata ends as llama-quantize leaves it, tensors come in its order, and bad imatrix files are clear errors.
// Byte identity with llama-quantize itself is the e2e test's (tests/e2e/cli_llama_quantize_test.cc).
#include "format/llama_quantizer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/half.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "format/imatrix_reader.h"
#include "quant/legacy_quantize.h"
#include "support/temp_dir_test.h"

namespace pagoda::format {
namespace {

class LlamaQuantizerTest : public testing_support::TempDirTest {};

LlamaQuantizeOptions options(const std::string& out, LlamaFileType type, const ImportanceMatrix* imatrix = nullptr,
                             const std::string& imatrix_path = "") {
  LlamaQuantizeOptions o;
  o.input_path = PAGODA_TEST_BUNDLED_MODEL;
  o.output_path = out;
  o.file_type = type;
  o.imatrix = imatrix;
  o.imatrix_path = imatrix_path;
  return o;
}

std::vector<uint8_t> q5_0_bytes(const GgufTensorInfo& t, const float* importance) {
  std::vector<quant::BlockQ5_0> blocks(size_t(t.num_elements() / 32));
  quant::quantize_rows_q5_0(static_cast<const float*>(t.data), blocks.data(), t.dims[1], t.dims[0], importance);
  std::vector<uint8_t> out(blocks.size() * sizeof(quant::BlockQ5_0));
  std::memcpy(out.data(), blocks.data(), out.size());
  return out;
}

const GgufTensorInfo& find_tensor(const GgufFile& f, const std::string& name) {
  for (const GgufTensorInfo& t : f.tensors())
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

// An imatrix GGUF as llama-imatrix writes it: NAME.in_sum2 [row_len, 1] and NAME.counts [1, 1], f32.
void write_imatrix(const std::string& path, const std::string& weight, const std::vector<float>& sums, float count,
                   bool with_counts = true) {
  GgufWriter w;
  w.set("general.type", GgufValue::string("imatrix"));
  w.set("imatrix.datasets", GgufValue::string_array({"calibration.txt"}));
  w.set("imatrix.chunk_count", GgufValue::u32(3));
  w.set("imatrix.chunk_size", GgufValue::u32(64));
  w.add_tensor(weight + ".in_sum2", GgmlType::kF32, {int64_t(sums.size()), 1}, sums.data(),
               sums.size() * sizeof(float));
  if (with_counts) w.add_tensor(weight + ".counts", GgmlType::kF32, {1, 1}, &count, sizeof(float));
  ASSERT_TRUE(w.write(path).ok());
}

TEST_F(LlamaQuantizerTest, WritesTheMixtureInLlamaQuantizeOrderWithItsMetadata) {
  const std::string out = path("q4km.gguf");
  auto report = quantize_gguf_llama(options(out, LlamaFileType::kQ4_K_M));
  ASSERT_TRUE(report.ok()) << report.error();
  auto src = GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  auto dst = GgufFile::open(out);
  ASSERT_TRUE(src.ok() && dst.ok());
  const auto& md = dst->metadata();
  ASSERT_GE(md.size(), 2u);
  EXPECT_EQ(md[md.size() - 2].first, "general.quantization_version");
  EXPECT_EQ(md.back().first, "general.file_type");
  EXPECT_EQ(dst->get_u32("general.file_type")->value(), 15u);
  EXPECT_EQ(dst->get_u32("general.quantization_version")->value(), 2u);
  EXPECT_EQ(dst->get_string_array("tokenizer.ggml.tokens")->value(),
            src->get_string_array("tokenizer.ggml.tokens")->value());
  // Outside tensors first, then block 0, by name.
  ASSERT_EQ(dst->tensors().size(), src->tensors().size());
  size_t first_block = 0;
  while (!dst->tensors()[first_block].name.starts_with("blk.")) ++first_block;
  for (size_t i = first_block; i < dst->tensors().size(); ++i)
    EXPECT_TRUE(dst->tensors()[i].name.starts_with("blk.")) << dst->tensors()[i].name;
  EXPECT_LT(dst->tensors()[first_block].name, dst->tensors()[first_block + 1].name);

  const GgufTensorInfo& q = find_tensor(*dst, "blk.0.attn_q.weight");
  EXPECT_EQ(q.type, GgmlType::kQ5_0);  // 64-wide rows: q4_K's fallback
  const std::vector<uint8_t> expected = q5_0_bytes(find_tensor(*src, "blk.0.attn_q.weight"), nullptr);
  ASSERT_EQ(q.size_bytes, expected.size());
  EXPECT_EQ(std::memcmp(q.data, expected.data(), expected.size()), 0);
  const GgufTensorInfo& down = find_tensor(*dst, "blk.0.ffn_down.weight");
  EXPECT_EQ(down.type, GgmlType::kF16);  // 172-wide rows fit no block
  const GgufTensorInfo& down_src = find_tensor(*src, "blk.0.ffn_down.weight");
  EXPECT_EQ(static_cast<const uint16_t*>(down.data)[5],
            float_to_fp16(static_cast<const float*>(down_src.data)[5]));
  EXPECT_EQ(find_tensor(*dst, "blk.0.attn_norm.weight").type, GgmlType::kF32);
}

TEST_F(LlamaQuantizerTest, AnImportanceMatrixWeighsTheQuantizerAndIsRecorded) {
  auto src = GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_TRUE(src.ok());
  std::vector<float> sums(64);
  for (size_t i = 0; i < sums.size(); ++i) sums[i] = float(1 + (i % 7) * (i % 7)) * 10.0f;
  const std::string imatrix_path = path("imatrix.gguf");
  write_imatrix(imatrix_path, "blk.0.attn_q.weight", sums, 10.0f);
  auto imatrix = read_importance_matrix(imatrix_path);
  ASSERT_TRUE(imatrix.ok()) << imatrix.error();
  ASSERT_EQ(imatrix->weights.size(), 1u);
  const std::vector<float>& w = imatrix->weights.at("blk.0.attn_q.weight");
  EXPECT_FLOAT_EQ(w[3], sums[3] / 10.0f);
  EXPECT_EQ(imatrix->datasets, std::vector<std::string>{"calibration.txt"});

  const std::string out = path("q4km-imatrix.gguf");
  auto report = quantize_gguf_llama(options(out, LlamaFileType::kQ4_K_M, &*imatrix, "my.imatrix"));
  ASSERT_TRUE(report.ok()) << report.error();
  auto dst = GgufFile::open(out);
  ASSERT_TRUE(dst.ok());
  EXPECT_EQ(dst->get_string("quantize.imatrix.file")->value(), "my.imatrix");
  EXPECT_EQ(dst->get_string("quantize.imatrix.dataset")->value(), "calibration.txt");
  EXPECT_EQ(dst->get_u32("quantize.imatrix.entries_count")->value(), 1u);
  EXPECT_EQ(dst->get_u32("quantize.imatrix.chunks_count")->value(), 3u);
  const GgufTensorInfo& src_q = find_tensor(*src, "blk.0.attn_q.weight");
  const std::vector<uint8_t> weighted = q5_0_bytes(src_q, w.data());
  const std::vector<uint8_t> plain = q5_0_bytes(src_q, nullptr);
  EXPECT_NE(weighted, plain);
  EXPECT_EQ(std::memcmp(find_tensor(*dst, "blk.0.attn_q.weight").data, weighted.data(), weighted.size()), 0);
  // A tensor the matrix does not name is quantized without weights.
  const std::vector<uint8_t> k_plain = q5_0_bytes(find_tensor(*src, "blk.0.attn_k.weight"), nullptr);
  EXPECT_EQ(std::memcmp(find_tensor(*dst, "blk.0.attn_k.weight").data, k_plain.data(), k_plain.size()), 0);
}

TEST_F(LlamaQuantizerTest, BadImportanceMatricesAreClearErrors) {
  write_imatrix(path("no-counts.gguf"), "blk.0.attn_q.weight", std::vector<float>(64, 1.0f), 1.0f, false);
  auto no_counts = read_importance_matrix(path("no-counts.gguf"));
  ASSERT_FALSE(no_counts.ok());
  EXPECT_NE(no_counts.error().find("without .counts"), std::string::npos) << no_counts.error();

  auto not_gguf = read_importance_matrix(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_FALSE(not_gguf.ok());
  EXPECT_NE(not_gguf.error().find("missing imatrix metadata"), std::string::npos) << not_gguf.error();

  write_imatrix(path("wrong-size.gguf"), "blk.0.attn_q.weight", std::vector<float>(32, 1.0f), 1.0f);
  auto wrong = read_importance_matrix(path("wrong-size.gguf"));
  ASSERT_TRUE(wrong.ok());
  auto report = quantize_gguf_llama(options(path("x.gguf"), LlamaFileType::kQ4_K_M, &*wrong));
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().find("has 32 values for 'blk.0.attn_q.weight'"), std::string::npos) << report.error();
}

}  // namespace
}  // namespace pagoda::format
