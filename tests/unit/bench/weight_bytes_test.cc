// weight_bytes_per_token: what one decode token reads from a model file's weights, the figure behind bench
// latency's MBU: every tensor once, the untied token embedding one row, and a mixture of experts' stacked
// expert tensors only in the share of the experts a token uses.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "bench/latency_bench.h"
#include "format/gguf_reader.h"
#include "synth/hf_random_model_writer.h"
#include "synth/random_model_writer.h"

namespace pagoda::bench {
namespace {

TEST(WeightBytesPerToken, ExpertsCountInTheShareOfTheExpertsATokenUses) {
  const std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-qwen3moe");
  ASSERT_TRUE(shape);
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("pagoda_weight_bytes_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".gguf"))
          .string();
  ASSERT_TRUE(synth::write_random_hf_model({.shape = *shape, .output_path = path, .gguf = true}).ok());
  EXPECT_FALSE(synth::write_random_model({.shape = *shape, .output_path = path + ".llama"}).ok());  // not as llama
  auto file = format::GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error();
  double total = 0.0, experts = 0.0, embedding = 0.0;
  for (const format::GgufTensorInfo& t : file->tensors()) {
    total += double(t.size_bytes);
    if (t.name.find("_exps.") != std::string::npos) experts += double(t.size_bytes);
    if (t.name == "token_embd.weight") embedding += double(t.size_bytes);
  }
  ASSERT_GT(experts, 0.0);
  ASSERT_GT(embedding, 0.0);
  const bool tied = file->find_tensor("output.weight") == nullptr;
  const double embedding_read = tied ? embedding : embedding / shape->vocab_size;
  const double dense = total - experts - embedding + embedding_read;
  // As a dense model (no expert counts): every expert in full.
  EXPECT_DOUBLE_EQ(weight_bytes_per_token(*file, shape->vocab_size), dense + experts);
  // 4 of 16 experts per token.
  EXPECT_DOUBLE_EQ(weight_bytes_per_token(*file, shape->vocab_size, 16, 4), dense + experts / 4.0);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagoda::bench
