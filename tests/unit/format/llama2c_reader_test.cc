// llama2.c checkpoint/tokenizer readers and the llama2c -> GGUF converter, on the bundled stories260K files.
#include "format/llama2c_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "format/gguf_reader.h"
#include "format/llama2c_converter.h"
#include "support/temp_dir_test.h"

namespace pagoda::format {
namespace {

using ::testing::HasSubstr;

const std::string kDir = PAGODA_TEST_ASSETS_DIR "/models/stories260K";
const std::string kCheckpoint = kDir + "/stories260K.bin";
const std::string kTokenizer = kDir + "/tok512.bin";

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

using testing_support::process_temp_path;

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = process_temp_path(name);
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

TEST(Llama2cReaderTest, HeaderAndTensorsOfStories260K) {
  auto ckpt = read_llama2c_checkpoint(kCheckpoint);
  ASSERT_TRUE(ckpt.ok()) << ckpt.error();
  const Llama2cConfig& c = ckpt->config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(c.shared_classifier);

  // token_embd + 9 per layer + output_norm; no output.weight since the classifier is shared.
  ASSERT_EQ(ckpt->tensors.size(), 1u + 9u * 5u + 1u);
  EXPECT_EQ(ckpt->tensors.front().name, "token_embd.weight");
  EXPECT_EQ(ckpt->tensors.front().dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(ckpt->tensors[2].name, "blk.0.attn_q.weight");
  EXPECT_EQ(ckpt->tensors[3].name, "blk.0.attn_k.weight");
  EXPECT_EQ(ckpt->tensors[3].dims, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(ckpt->tensors[7].name, "blk.0.ffn_gate.weight");
  EXPECT_EQ(ckpt->tensors[8].name, "blk.0.ffn_down.weight");
  EXPECT_EQ(ckpt->tensors[8].dims, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(ckpt->tensors.back().name, "output_norm.weight");

  // The views point at the right bytes: the embedding starts right after the 28-byte header, and the
  // final norm right before the unused freq_cis tables (seq_len * head_size floats) at the end of the file.
  const std::string bytes = read_all(kCheckpoint);
  float first;
  std::memcpy(&first, bytes.data() + 28, 4);
  EXPECT_EQ(ckpt->tensors.front().data[0], first);
  const size_t final_norm_offset = bytes.size() - size_t(512 * 8) * 4 - 64 * 4;
  float norm0;
  std::memcpy(&norm0, bytes.data() + final_norm_offset, 4);
  EXPECT_EQ(ckpt->tensors.back().data[0], norm0);
  uint64_t total = 0;
  for (const auto& t : ckpt->tensors) total += t.num_elements;
  EXPECT_EQ(total * 4 + 28 + 512 * 8 * 4, bytes.size());
}

TEST(Llama2cReaderTest, TruncatedCheckpointsAreRejected) {
  const std::string bytes = read_all(kCheckpoint);
  for (size_t len :
       {size_t(0), size_t(5), size_t(27), size_t(28), size_t(1000), bytes.size() / 2, bytes.size() - 512 * 8 * 4 - 1}) {
    auto r = read_llama2c_checkpoint(write_temp("trunc.bin", bytes.substr(0, len)));
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_THAT(r.error(), HasSubstr("trunc.bin"));
  }
}

TEST(Llama2cReaderTest, GarbageHeadersAreRejected) {
  std::string bytes = read_all(kCheckpoint);
  for (int field = 0; field < 7; ++field) {
    std::string bad = bytes;
    const int32_t values[] = {0, -5, 1 << 30};
    for (int32_t v : values) {
      if (field == 5 && v == -5) continue;  // a negative vocab_size is legal (unshared classifier)
      std::memcpy(bad.data() + field * 4, &v, 4);
      auto r = read_llama2c_checkpoint(write_temp("bad.bin", bad));
      EXPECT_FALSE(r.ok()) << "field " << field << " = " << v;
    }
  }
  // n_heads that does not divide dim.
  std::string bad = bytes;
  const int32_t seven = 7;
  std::memcpy(bad.data() + 12, &seven, 4);
  auto r = read_llama2c_checkpoint(write_temp("heads.bin", bad));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("n_heads"));
}

TEST(Llama2cReaderTest, Vocabulary) {
  auto vocab = read_llama2c_vocab(kTokenizer, 512);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  ASSERT_EQ(vocab->pieces.size(), 512u);
  EXPECT_EQ(vocab->pieces[0], "<unk>");
  EXPECT_EQ(vocab->pieces[3], "<0x00>");
  EXPECT_EQ(vocab->pieces[403], " Once");
  EXPECT_EQ(vocab->scores[403], -144.0f);

  const std::string bytes = read_all(kTokenizer);
  auto truncated = read_llama2c_vocab(write_temp("tok.bin", bytes.substr(0, bytes.size() - 3)), 512);
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.error(), HasSubstr("tok.bin"));
  auto more_than_there = read_llama2c_vocab(kTokenizer, 513);
  EXPECT_FALSE(more_than_there.ok());
}

TEST(Llama2cConverterTest, WritesLlamaCppMetadataAndTokens) {
  // Named after the checkpoint so that general.name defaults to its stem.
  const std::string out = process_temp_path("converted.gguf");
  Status st = convert_llama2c_to_gguf({kCheckpoint, kTokenizer, out, "", ""});
  ASSERT_TRUE(st.ok()) << st.message();
  auto file = GgufFile::open(out);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->get_string("general.architecture")->value(), "llama");
  EXPECT_EQ(file->get_string("general.name")->value(), "stories260K");  // the checkpoint's stem
  EXPECT_EQ(file->get_u32("llama.attention.head_count_kv")->value(), 4u);
  EXPECT_EQ(file->get_u32("llama.rope.dimension_count")->value(), 8u);
  EXPECT_EQ(file->get_string("tokenizer.ggml.model")->value(), "llama");
  auto tokens = file->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok() && tokens->has_value());
  EXPECT_EQ((**tokens)[1], "<s>");
  EXPECT_EQ((**tokens)[403], "\xE2\x96\x81Once");  // the space is SentencePiece's U+2581 again
  auto types = file->get_i32_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok() && types->has_value());
  EXPECT_EQ((**types)[0], 2);    // unknown
  EXPECT_EQ((**types)[2], 3);    // control
  EXPECT_EQ((**types)[10], 6);   // byte
  EXPECT_EQ((**types)[403], 1);  // normal
  EXPECT_EQ(file->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(file->tensors().size(), 47u);
  std::filesystem::remove(out);
}

TEST(Llama2cConverterTest, UnwritableOutputIsAnError) {
  Status st = convert_llama2c_to_gguf({kCheckpoint, kTokenizer, "/nonexistent-dir/x.gguf", "", ""});
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent-dir/x.gguf"));
}

}  // namespace
}  // namespace pagoda::format
