// Robustness of GgufFile against damaged files: every truncation of a valid file must fail cleanly, and random
// byte flips / overwritten u64 fields must either fail cleanly or yield tensors that lie inside the buffer.
// Each parse gets its own exact-size heap copy, so ASan flags any read past the end.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "core/check.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "support/gguf_mutations.h"

namespace pagoda::format {
namespace {

struct ValidFile {
  std::vector<uint8_t> bytes;
  size_t data_start = 0;  // offset of the first tensor's bytes
};

ValidFile make_valid_file() {
  static const std::vector<uint8_t> f32_data(8 * 4 * 4, 0x11);   // f32 [8, 4]
  static const std::vector<uint8_t> f16_data(16 * 3 * 2, 0x22);  // f16 [16, 3]
  static const std::vector<uint8_t> bf16_data(32 * 2, 0x33);     // bf16 [32]: ends the file without padding
  GgufWriter writer;
  writer.set("general.architecture", GgufValue::string("llama"));
  writer.set("llama.context_length", GgufValue::u32(2048));
  writer.set("llama.rope.freq_base", GgufValue::f32(10000.0f));
  writer.set("general.flag", GgufValue::boolean(true));
  writer.set("tokenizer.ggml.tokens", GgufValue::string_array({"<unk>", "<s>", "</s>", "hello"}));
  writer.set("tokenizer.ggml.token_type", GgufValue::i32_array({2, 3, 3, 1}));
  writer.set("tokenizer.ggml.scores", GgufValue::f32_array({0.0f, -1.0f, -2.0f, -3.5f}));
  writer.set("test.nested", GgufValue::array_of(GgufValueType::kArray,
                                                {GgufValue::i32_array({1, 2}), GgufValue::string_array({"x", "yz"})}));
  writer.set("test.i64", GgufValue::i64v(-5));
  writer.add_tensor("token_embd.weight", GgmlType::kF32, {8, 4}, f32_data.data(), f32_data.size());
  writer.add_tensor("blk.0.attn_q.weight", GgmlType::kF16, {16, 3}, f16_data.data(), f16_data.size());
  writer.add_tensor("output_norm.weight", GgmlType::kBF16, {32}, bf16_data.data(), bf16_data.size());
  ValidFile file;
  file.bytes = writer.to_bytes();
  auto parsed = GgufFile::from_memory(file.bytes, "valid.gguf");
  PAGODA_CHECK(parsed.ok(), "{}", parsed.error());
  file.data_start = static_cast<size_t>(static_cast<const uint8_t*>(parsed->tensors()[0].data) - file.bytes.data());
  return file;
}

// A successful parse of damaged bytes must still honour GgufFile's invariant.
void expect_tensors_in_bounds(const GgufFile& file, const std::vector<uint8_t>& bytes) {
  const uint8_t* begin = bytes.data();
  const uint8_t* end = begin + bytes.size();
  for (const GgufTensorInfo& info : file.tensors()) {
    const auto* p = static_cast<const uint8_t*>(info.data);
    ASSERT_GE(p, begin);
    ASSERT_LE(info.size_bytes, static_cast<uint64_t>(end - p));
    EXPECT_EQ(info.offset % file.alignment(), 0u);
    EXPECT_TRUE(ggml_type_is_supported(info.type));
    EXPECT_EQ(info.size_bytes, ggml_row_bytes(info.type, static_cast<uint64_t>(info.dims[0])) *
                                   static_cast<uint64_t>(info.num_elements() / info.dims[0]));
    // Touch every byte so ASan would catch a tensor that escapes the buffer.
    uint64_t sum = 0;
    for (uint64_t i = 0; i < info.size_bytes; ++i) sum += p[i];
    (void)sum;
  }
}

TEST(GgufFuzzTest, EveryTruncationFailsCleanly) {
  const ValidFile valid = make_valid_file();
  ASSERT_EQ(valid.bytes.size() % 32, 0u);
  {
    auto last = GgufFile::from_memory(valid.bytes, "valid.gguf");
    ASSERT_TRUE(last.ok());
    const GgufTensorInfo& info = last->tensors().back();
    ASSERT_EQ(static_cast<const uint8_t*>(info.data) + info.size_bytes, valid.bytes.data() + valid.bytes.size())
        << "the last tensor must end the file, so that every truncation cuts into it";
  }
  for (size_t length = 0; length < valid.bytes.size(); ++length) {
    const std::vector<uint8_t> truncated(valid.bytes.begin(), valid.bytes.begin() + static_cast<ptrdiff_t>(length));
    auto file = GgufFile::from_memory(truncated, "cut.gguf");
    ASSERT_FALSE(file.ok()) << "length " << length;
    ASSERT_EQ(file.error().rfind("cut.gguf: ", 0), 0u) << file.error();
  }
}

TEST(GgufFuzzTest, RandomCorruptionsFailCleanlyOrStayInBounds) {
  const ValidFile valid = make_valid_file();
  std::mt19937_64 rng(20240611);
  const uint64_t interesting[] = {0,
                                  1,
                                  31,
                                  32,
                                  uint64_t{1} << 32,
                                  uint64_t{1} << 60,
                                  uint64_t{1} << 63,
                                  std::numeric_limits<uint64_t>::max(),
                                  std::numeric_limits<uint64_t>::max() - 31,
                                  valid.bytes.size()};
  int num_ok = 0;
  int num_failed = 0;
  for (int iteration = 0; iteration < 2000; ++iteration) {
    std::vector<uint8_t> bytes = valid.bytes;
    // Most damage lands in the header, metadata and tensor infos, where the parser makes its decisions.
    auto random_offset = [&](size_t width) {
      const size_t limit = (rng() % 8 != 0 ? valid.data_start : bytes.size()) - width + 1;
      return static_cast<size_t>(rng() % limit);
    };
    switch (rng() % 3) {
      case 0: {  // flip a few random bits
        const int num_flips = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < num_flips; ++i) bytes[random_offset(1)] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      }
      case 1: {  // overwrite a random byte
        bytes[random_offset(1)] = static_cast<uint8_t>(rng());
        break;
      }
      default: {  // overwrite 8 bytes with a random or extreme u64 (lengths, counts, dims, offsets)
        const uint64_t value = rng() % 2 == 0 ? rng() : interesting[rng() % std::size(interesting)];
        std::memcpy(bytes.data() + random_offset(8), &value, 8);
        break;
      }
    }
    auto file = GgufFile::from_memory(bytes, "bad.gguf");
    if (file.ok()) {
      ++num_ok;
      expect_tensors_in_bounds(*file, bytes);
    } else {
      ++num_failed;
      ASSERT_EQ(file.error().rfind("bad.gguf: ", 0), 0u) << file.error();
      ASSERT_EQ(file.error().find('\n'), std::string::npos) << file.error();
    }
  }
  // Both outcomes occur (damage inside strings or tensor data is harmless), so the test exercises both paths.
  EXPECT_GT(num_ok, 0);
  EXPECT_GT(num_failed, 0);
}

// Every key pagoda reads, set to a value of every GGUF type: the file parses, and each typed getter returns the
// value (when the type converts exactly) or an error naming the key; none throws, aborts or reads out of bounds.
TEST(GgufFuzzTest, KnownKeysOfEveryTypeGiveValuesOrErrorsNamingTheKey) {
  const char* const keys[] = {"general.architecture",
                              "general.name",
                              "llama.block_count",
                              "llama.context_length",
                              "llama.embedding_length",
                              "llama.attention.head_count",
                              "llama.attention.layer_norm_rms_epsilon",
                              "llama.rope.freq_base",
                              "tokenizer.ggml.model",
                              "tokenizer.ggml.tokens",
                              "tokenizer.ggml.scores",
                              "tokenizer.ggml.token_type",
                              "tokenizer.ggml.merges",
                              "tokenizer.ggml.bos_token_id",
                              "tokenizer.ggml.add_bos_token",
                              "tokenizer.chat_template"};
  int num_values = 0;
  int num_errors = 0;
  for (const char* key : keys) {
    for (const GgufValue& value : testing_support::type_swapped_gguf_values()) {
      GgufWriter writer;
      writer.set(key, value);
      const std::vector<uint8_t> bytes = writer.to_bytes();
      auto file = GgufFile::from_memory(bytes, "typed.gguf");
      ASSERT_TRUE(file.ok()) << key << ": " << file.error();
      auto count = [&](const auto& result) {
        if (result.ok()) {
          ++num_values;
          EXPECT_TRUE(result->has_value());
        } else {
          ++num_errors;
          EXPECT_NE(result.error().find(std::string("'") + key + "'"), std::string::npos) << result.error();
        }
      };
      count(file->get_string(key));
      count(file->get_u32(key));
      count(file->get_i64(key));
      count(file->get_f32(key));
      count(file->get_bool(key));
      count(file->get_string_array(key));
      count(file->get_f32_array(key));
      count(file->get_i32_array(key));
    }
  }
  EXPECT_GT(num_values, 0);
  EXPECT_GT(num_errors, num_values);  // most type pairs do not convert
  // The f64 that no float holds is an error rather than an undefined cast.
  GgufWriter writer;
  writer.set("big", GgufValue::f64v(1e300));
  writer.set("bigs", GgufValue::array_of(GgufValueType::kFloat64, {GgufValue::f64v(1.0), GgufValue::f64v(-1e300)}));
  const std::vector<uint8_t> bytes = writer.to_bytes();
  auto file = GgufFile::from_memory(bytes, "f.gguf");
  ASSERT_TRUE(file.ok());
  EXPECT_NE(file->get_f32("big").error().find("does not fit in f32"), std::string::npos);
  EXPECT_NE(file->get_f32_array("bigs").error().find("element 1 = -1e+300 does not fit in f32"), std::string::npos)
      << file->get_f32_array("bigs").error();
}

}  // namespace
}  // namespace pagoda::format
