// `pagoda quantize`: the bundled model to q8_0 and q4_0 through the real binary; the table, the sizes, and
// the quantized file runs (Q8_0 keeps the golden opening), with the same text with and without --no-fusion.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CliQuantizeTest, BundledModelToQ8_0AndQ4_0) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  for (const std::string type : {"q8_0", "q4_0"}) {
    const std::string out = dir + "/m-" + type + ".gguf";
    ProcessResult q = run_pagoda({"quantize", PAGODA_TEST_BUNDLED_MODEL, out, "--type", type});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_THAT(q.out, ContainsRegex("blk\\.0\\.attn_q\\.weight +64 x 64 +f32 +" + type));
    // Rows that are not whole 32-value blocks become f16, as llama-quantize writes them.
    EXPECT_THAT(q.out, ContainsRegex("blk\\.0\\.ffn_down\\.weight +172 x 64 +f32 +f16 "));
    EXPECT_THAT(q.out, HasSubstr("file: 1.01 MiB -> "));
    ProcessResult r =
        run_pagoda({"run", "-q", "--threads", "1", "-m", out, "-p", "Once upon a time", "-n", "20", "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, StartsWith("Once upon a time, there was a little girl named Lily."));
    // The fused ops (one Q8_0 quantization for Q/K/V, SiLU and w_down's input in the gate/up job) give the
    // unfused text, on two threads so the row splits are exercised.
    std::vector<std::string> args = {"run", "-q",  "--threads", "2", "-m", out, "-p", "Once upon a time",
                                     "-n",  "100", "--temp",    "0"};
    ProcessResult fused = run_pagoda(args);
    args.push_back("--no-fusion");
    ProcessResult plain = run_pagoda(args);
    ASSERT_EQ(fused.exit_code, 0) << fused.err;
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(fused.out, plain.out) << type;
  }
  ProcessResult bad = run_pagoda({"quantize", PAGODA_TEST_BUNDLED_MODEL, dir + "/x.gguf", "--type", "q3_k"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--type q3_k is not supported"));
  ProcessResult same = run_pagoda({"quantize", dir + "/m-q8_0.gguf", dir + "/m-q8_0.gguf", "--type", "q8_0"});
  EXPECT_EQ(same.exit_code, 1);
}

}  // namespace
}  // namespace pagoda::e2e
