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
  write_file(dir_ + "/range.json", R"({"kv_cache": {"block_size": 3}})");
  expect_clean_error(run_pagoda({"run", "--config", dir_ + "/range.json", "-p", "hi"}), "kv_cache.block_size");
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

// Issue 23: hyper-parameters the tensors cannot back (a block count of 2^24..2^31 used to size per-layer state
// before any tensor was looked up: std::bad_alloc, or gigabytes resident) are refused naming the key.
TEST_F(CliErrorsTest, AbsurdHyperParametersAreClearErrors) {
  auto file = format::GgufFile::from_memory(
      {reinterpret_cast<const uint8_t*>(model_bytes_.data()), model_bytes_.size()}, "bundled");
  ASSERT_TRUE(file.ok()) << file.error();
  const auto edited = [&](const std::string& key, uint32_t value) {
    format::GgufWriter w;
    for (const auto& [k, v] : file->metadata()) w.set(k, v);
    w.set(key, format::GgufValue::u32(value));
    for (const auto& t : file->tensors()) w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
    const std::vector<uint8_t> bytes = w.to_bytes();
    return std::string(bytes.begin(), bytes.end());
  };
  for (uint32_t blocks : {uint32_t(1) << 24, uint32_t(1) << 31, uint32_t(INT32_MAX), uint32_t(6)}) {
    SCOPED_TRACE(blocks);
    expect_clean_error(run_model(edited("llama.block_count", blocks)), "llama.block_count = ");
  }
  expect_clean_error(run_model(edited("llama.context_length", uint32_t(1) << 30)), "llama.context_length");
  expect_clean_error(run_model(edited("llama.attention.head_count", uint32_t(1) << 30)), "llama.attention.head_count");
  expect_clean_error(run_model(edited("llama.embedding_length", UINT32_MAX)), "llama.embedding_length");
  expect_clean_error(run_model(edited("llama.feed_forward_length", uint32_t(1) << 28)), "llama.feed_forward_length");
  expect_clean_error(run_model(edited("llama.attention.head_count_kv", 0)), "llama.attention.head_count_kv");
}

// Issue 23: a conversation field of the wrong JSON type made nlohmann's value() throw out of main (abort).
TEST_F(CliErrorsTest, ChatTemplateRenderingRefusesWrongFieldTypes) {
  write_file(dir_ + "/t.jinja",
             "{% for m in messages %}{{ m.content }}{% endfor %}"
             "{% if add_generation_prompt %}>{% endif %}");
  const auto render = [&](const std::string& line) {
    write_file(dir_ + "/chats.jsonl", line + "\n");
    return run_program({"sh", "-c",
                        "exec '" + std::string(PAGODA_TEST_BINARY) + "' tokenize --chat-template '" + dir_ +
                            "/t.jinja' --jsonl < '" + dir_ + "/chats.jsonl'"});
  };
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  ProcessResult good = render("{" + messages + R"(, "add_generation_prompt": true})");
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(good.out, "\"hi>\"\n");
  expect_clean_error(render("{" + messages + R"(, "add_generation_prompt": "yes"})"),
                     "stdin line 1: add_generation_prompt must be true or false");
  expect_clean_error(render("{" + messages + R"(, "bos_token": 1})"), "stdin line 1: bos_token must be a string");
  expect_clean_error(render(R"({"messages": [{"role": "user", "content": ["hi"]}]})"),
                     "each message needs a string role and a string (or null) content");
  expect_clean_error(render(R"({"messages": 5})"), "expected a JSON object with a messages array");
  expect_clean_error(render(std::string(100000, '[')), "stdin line 1: JSON nested deeper than 64 levels");
}

// Issue 23: this template ran for ever (400,000 strings of 15 MB, each under the per-value limit). Its render
// now stops at the render budget with a clear error.
TEST_F(CliErrorsTest, HostileChatTemplateStopsAtItsBudget) {
  write_file(dir_ + "/hostile.jinja", "{% for i in range(400000) %}{% set x = 'a' * 15000000 %}{% endfor %}");
  write_file(dir_ + "/chats.jsonl", R"({"messages": [{"role": "user", "content": "hi"}]})"
                                    "\n");
  ProcessResult r = run_program({"sh", "-c",
                                 "exec '" + std::string(PAGODA_TEST_BINARY) + "' tokenize --chat-template '" + dir_ +
                                     "/hostile.jinja' --jsonl < '" + dir_ + "/chats.jsonl'"});
  expect_clean_error(r, "stdin line 1: jinja: line 1: the render exceeds its budget of 268435456 bytes built");
}

TEST_F(CliErrorsTest, EmbedTakesNoDecodingFlags) {
  // An embedding run never decodes: the decode-pacing and speculative flags are unknown to it, and the config's
  // slo is noted unused, not applied.
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {"--tpot-slo", "50"}, {"--ttft-slo", "500"}, {"--max-prefill-with-decodes", "8"}, {"--spec", "ngram"}}) {
    std::vector<std::string> args = {"embed"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("hello");
    ProcessResult r = run_pagoda(args);
    EXPECT_EQ(r.term_signal, 0);
    EXPECT_NE(r.exit_code, 0) << flags[0];
    EXPECT_THAT(r.err, HasSubstr(flags[0])) << r.err;
  }
  write_file(dir_ + "/slo.json", R"({"slo": {"tpot_ms": 50}})");
  const ProcessResult r = run_pagoda({"embed", "--config", dir_ + "/slo.json", "hello"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("slo.tpot_ms = 50"));
  EXPECT_THAT(r.err, HasSubstr("not used"));
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
