// The random-weight writers: a GGUF of the "tiny" shape carries its shape in llama.cpp's keys and tensors, its
// weights have the advertised spread, and the same seed writes the same bytes (another seed other weights); an HF
// folder's config.json names its architecture and sizes.
#include "synth/random_model_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "format/gguf_reader.h"
#include "support/temp_dir_test.h"
#include "synth/hf_random_model_writer.h"

namespace pagoda::synth {
namespace {

using RandomModelWriter = testing_support::TempDirTest;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(RandomModelWriter, TinyGgufCarriesItsShapeAndWeightsOfTheAdvertisedSpread) {
  const std::optional<ModelShape> shape = find_model_shape("tiny");
  ASSERT_TRUE(shape);
  ASSERT_TRUE(write_random_model({.shape = *shape, .seed = 7, .output_path = path("a.gguf")}).ok());
  Result<format::GgufFile> file = format::GgufFile::open(path("a.gguf"));
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->get_u32("llama.block_count").value(), std::optional<uint32_t>(uint32_t(shape->num_layers)));
  EXPECT_EQ(file->get_u32("llama.embedding_length").value(), std::optional<uint32_t>(uint32_t(shape->dim)));
  EXPECT_EQ(file->get_u32("llama.attention.head_count_kv").value(),
            std::optional<uint32_t>(uint32_t(shape->num_kv_heads)));
  const format::GgufTensorInfo* q = file->find_tensor("blk.1.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dims, (std::vector<int64_t>{shape->dim, shape->dim}));
  ASSERT_EQ(q->type, format::GgmlType::kF32);
  // Uniform weights of std 0.02 (half-width 0.02 * sqrt 3).
  const float* w = static_cast<const float*>(q->data);
  const int64_t n = q->num_elements();
  double sum = 0.0, sum_sq = 0.0, max_abs = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += w[i];
    sum_sq += double(w[i]) * w[i];
    max_abs = std::max(max_abs, double(std::fabs(w[i])));
  }
  EXPECT_NEAR(sum / double(n), 0.0, 0.002);
  EXPECT_NEAR(std::sqrt(sum_sq / double(n)), 0.02, 0.002);
  EXPECT_LE(max_abs, 0.02 * std::sqrt(3.0) + 1e-6);
  const format::GgufTensorInfo* norm = file->find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(static_cast<const float*>(norm->data)[0], 1.0f);

  ASSERT_TRUE(write_random_model({.shape = *shape, .seed = 7, .output_path = path("b.gguf")}).ok());
  ASSERT_TRUE(write_random_model({.shape = *shape, .seed = 8, .output_path = path("c.gguf")}).ok());
  EXPECT_EQ(read_all(path("a.gguf")), read_all(path("b.gguf")));
  EXPECT_NE(read_all(path("a.gguf")), read_all(path("c.gguf")));
}

TEST_F(RandomModelWriter, QuantizedTypesAndTheirRefusals) {
  const std::optional<ModelShape> shape = find_model_shape("tiny");
  ASSERT_TRUE(shape);
  for (format::GgmlType type : {format::GgmlType::kF16, format::GgmlType::kQ8_0, format::GgmlType::kQ4_0}) {
    ASSERT_TRUE(random_model_supports(type));
    ASSERT_TRUE(write_random_model({.shape = *shape, .weight_type = type, .output_path = path("q.gguf")}).ok());
    Result<format::GgufFile> file = format::GgufFile::open(path("q.gguf"));
    ASSERT_TRUE(file.ok()) << file.error();
    const format::GgufTensorInfo* q = file->find_tensor("blk.0.ffn_up.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->type, type);
  }
  // A family shape goes through the HF writer; the llama writer says so rather than writing a wrong file.
  const std::optional<ModelShape> qwen = find_model_shape("tiny-qwen3");
  ASSERT_TRUE(qwen);
  EXPECT_FALSE(write_random_model({.shape = *qwen, .output_path = path("qwen.gguf")}).ok());
}

TEST_F(RandomModelWriter, HfFolderConfigNamesItsArchitectureAndSizes) {
  const std::optional<ModelShape> shape = find_model_shape("tiny-qwen3");
  ASSERT_TRUE(shape);
  const Status st = write_random_hf_model({.shape = *shape, .output_path = path("qwen3")});
  ASSERT_TRUE(st.ok()) << st.message();
  const nlohmann::json config = nlohmann::json::parse(read_all(path("qwen3/config.json")));
  EXPECT_EQ(config["architectures"][0], "Qwen3ForCausalLM");
  EXPECT_EQ(config["hidden_size"], shape->dim);
  EXPECT_EQ(config["num_hidden_layers"], shape->num_layers);
  EXPECT_EQ(config["num_key_value_heads"], shape->num_kv_heads);
  EXPECT_TRUE(std::filesystem::exists(path("qwen3/model.safetensors")));
}

}  // namespace
}  // namespace pagoda::synth
