// Bad input through the real binary: one clear error line on stderr and a non-zero exit, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

// Exits non-zero by itself (no signal) and prints exactly one "pagoda: error:" line containing `expected`.
void expect_clean_error(const ProcessResult& r, const std::string& expected) {
  EXPECT_EQ(r.term_signal, 0) << "killed by signal " << r.term_signal << "; stderr: " << r.err;
  EXPECT_GT(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("pagoda: error: "));
  EXPECT_THAT(r.err, HasSubstr(expected));
}

class CliErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir_.path();
    model_bytes_ = read_file(PAGODA_TEST_BUNDLED_MODEL);
    ASSERT_GT(model_bytes_.size(), 1000u);
  }
  ProcessResult run_model(const std::string& bytes) {
    write_file(dir_ + "/m.gguf", bytes);
    return run_pagoda({"run", "-m", dir_ + "/m.gguf", "-p", "Once", "-n", "2"});
  }
  TempDir temp_dir_;
  std::string dir_;
  std::string model_bytes_;
};

TEST_F(CliErrorsTest, MissingModelFile) {
  expect_clean_error(run_pagoda({"run", "-m", dir_ + "/nope.gguf", "-p", "hi"}), "nope.gguf");
}

TEST_F(CliErrorsTest, ADirectoryIsNotAModel) { expect_clean_error(run_pagoda({"run", "-m", dir_, "-p", "hi"}), dir_); }

TEST_F(CliErrorsTest, NotAGgufFile) {
  expect_clean_error(run_model("this is a text file, not a model\n"), "not a GGUF file");
}

TEST_F(CliErrorsTest, TruncatedFilesAtManyLengths) {
  // Lengths across the header, the metadata, the tensor infos and the data.
  for (size_t len : {size_t(0), size_t(3), size_t(4), size_t(11), size_t(24), size_t(100), size_t(5000),
                     model_bytes_.size() / 2, model_bytes_.size() - 1}) {
    SCOPED_TRACE(len);
    expect_clean_error(run_model(model_bytes_.substr(0, len)), "m.gguf");
  }
}

TEST_F(CliErrorsTest, TensorPastTheEndOfTheFile) {
  // Drop the last 4 KiB: the tensor infos are intact, the last tensors' data is not there.
  expect_clean_error(run_model(model_bytes_.substr(0, model_bytes_.size() - 4096)), "end of the file");
}

TEST_F(CliErrorsTest, UnknownArchitecture) {
  auto file = format::GgufFile::from_memory(
      {reinterpret_cast<const uint8_t*>(model_bytes_.data()), model_bytes_.size()}, "bundled");
  ASSERT_TRUE(file.ok()) << file.error();
  format::GgufWriter w;
  for (const auto& [key, value] : file->metadata()) w.set(key, value);
  w.set("general.architecture", format::GgufValue::string("mamba"));
  for (const auto& t : file->tensors()) w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
  const std::vector<uint8_t> bytes = w.to_bytes();
  expect_clean_error(run_model(std::string(bytes.begin(), bytes.end())), "unknown architecture 'mamba'");
}

TEST_F(CliErrorsTest, PromptLongerThanTheContext) {
  expect_clean_error(run_pagoda({"run", "--max-seq-len", "4", "-p", "Once upon a time there was"}),
                     "the context holds 4");
}

TEST_F(CliErrorsTest, BadConfigFiles) {
  write_file(dir_ + "/unknown.json", R"({"kv_cache": {"page_sise": 16}})");
  expect_clean_error(run_pagoda({"run", "--config", dir_ + "/unknown.json", "-p", "hi"}), "kv_cache.page_sise");
  write_file(dir_ + "/type.json", R"({"max_seq_len": "long"})");
  expect_clean_error(run_pagoda({"run", "--config", dir_ + "/type.json", "-p", "hi"}), "max_seq_len");
  write_file(dir_ + "/range.json", R"({"kv_cache": {"page_size": 3}})");
  expect_clean_error(run_pagoda({"run", "--config", dir_ + "/range.json", "-p", "hi"}), "kv_cache.page_size");
  write_file(dir_ + "/broken.json", R"({"max_seq_len": )");
  expect_clean_error(run_pagoda({"run", "--config", dir_ + "/broken.json", "-p", "hi"}), "broken.json");
  expect_clean_error(run_pagoda({"run", "--config", dir_ + "/absent.json", "-p", "hi"}), "absent.json");
  // --config is accepted by every subcommand.
  expect_clean_error(run_pagoda({"tokenize", "--config", dir_ + "/unknown.json", "hi"}), "kv_cache.page_sise");
}

TEST_F(CliErrorsTest, BadSamplingFlags) {
  expect_clean_error(run_pagoda({"run", "-p", "hi", "--top-p", "1.5"}), "top_p");
  expect_clean_error(run_pagoda({"run", "-p", "hi", "-n", "0"}), "max_tokens");
  expect_clean_error(run_pagoda({"run", "-p", "hi", "--temp", "-1"}), "temperature");
}

TEST_F(CliErrorsTest, BenchLatencyRangesDoNotOverflow) {
  expect_clean_error(run_pagoda({"bench", "latency", "--prompt-len", "2147483647", "--gen", "2"}),
                     "exceeds the model's context of 512");
}

TEST_F(CliErrorsTest, UnknownFlagsAndSubcommandsFail) {
  ProcessResult r = run_pagoda({"run", "--no-such-flag"});
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_NE(r.exit_code, 0);
  ProcessResult s = run_pagoda({"frobnicate"});
  EXPECT_EQ(s.term_signal, 0);
  EXPECT_NE(s.exit_code, 0);
}

}  // namespace
}  // namespace pagoda::e2e
