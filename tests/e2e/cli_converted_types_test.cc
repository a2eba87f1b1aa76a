// GGUF tensor types pagoda re-encodes at load or runs through kernels of their own, through the real binary: the
// bundled model with its matrices rewritten as q4_1, q5_0 and q5_1 blocks (random quants, small scales) generates,
// and stderr names the re-encoded q5_0 and no conversion; a type pagoda cannot run (q8_1) is one clean error naming the type and the tensor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using format::GgmlType;
using ::testing::HasSubstr;
using ::testing::Not;

// The bundled model with every 2-D tensor whose rows are whole 32-value blocks stored as `types` in turn (the
// blocks' fp16 scale, their first two bytes, set to +-0.0039; the rest random).
std::string rewrite_bundled(const std::vector<GgmlType>& types, std::vector<std::vector<uint8_t>>& keep) {
  auto base = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  EXPECT_TRUE(base.ok()) << base.error();
  format::GgufWriter w;
  for (const auto& [key, value] : base->metadata()) w.set(key, value);
  std::mt19937 rng(3);
  size_t next = 0;
  for (const format::GgufTensorInfo& t : base->tensors()) {
    if (t.dims.size() != 2 || t.dims[0] % 32 != 0) {
      w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      continue;
    }
    const GgmlType type = types[next++ % types.size()];
    const size_t block_bytes = format::ggml_type_size(type);
    keep.emplace_back(size_t(t.num_elements() / 32) * block_bytes);
    for (uint8_t& b : keep.back()) b = uint8_t(rng());
    for (size_t at = 0; at < keep.back().size(); at += block_bytes) {
      const uint16_t d = rng() % 2 ? 0x1c00 : 0x9c00;
      std::memcpy(&keep.back()[at], &d, 2);
    }
    w.add_tensor(t.name, type, t.dims, keep.back().data(), keep.back().size());
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  return std::string(bytes.begin(), bytes.end());
}

TEST(CliConvertedTypesTest, AFileOfConvertedTypesGenerates) {
  TempDir dir;
  std::vector<std::vector<uint8_t>> keep;
  const std::string path = dir.path() + "/converted.gguf";
  write_file(path, rewrite_bundled({GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1}, keep));
  const ProcessResult r = run_pagoda({"run", "-m", path, "-p", "Once upon a time", "-n", "8", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Once upon a time"));
  EXPECT_GT(r.out.size(), std::string("Once upon a time").size()) << "some tokens were generated";
  // q4_1 and q5_1 run as stored; q5_0 is re-encoded into q8_0.
  EXPECT_THAT(r.err, HasSubstr("pagoda: weights: re-encoded losslessly at load"));
  EXPECT_THAT(r.err, HasSubstr("q5_0 as q8_0"));
  EXPECT_THAT(r.err, Not(HasSubstr("converted at load")));
}

TEST(CliConvertedTypesTest, ATypePagodaCannotRunIsOneCleanError) {
  TempDir dir;
  std::vector<std::vector<uint8_t>> keep;
  const std::string path = dir.path() + "/q8_1.gguf";
  write_file(path, rewrite_bundled({GgmlType::kQ8_1}, keep));
  const ProcessResult r = run_pagoda({"run", "-m", path, "-p", "Once", "-n", "2"});
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_GT(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("pagoda: error: "));
  // The first such tensor in the file's order is named.
  EXPECT_THAT(r.err,
              ::testing::ContainsRegex("tensor '[a-z0-9_.]+\\.weight' has type q8_1, which pagoda cannot load yet"));
}

}  // namespace
}  // namespace pagoda::e2e
