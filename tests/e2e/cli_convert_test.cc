// `pagoda convert --from llama2c`: reproduces the bundled GGUF byte for byte, and rejects bad checkpoints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

const std::string kAssets = PAGODA_TEST_ASSETS_DIR "/models/stories260K";

TEST(CliConvertTest, ReproducesTheBundledGgufExactly) {
  const std::string dir = make_temp_dir();
  ProcessResult r = run_pagoda({"convert", "--from", "llama2c", kAssets + "/stories260K.bin", kAssets + "/tok512.bin",
                                "-o", dir + "/out.gguf", "--name", "stories260K"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string produced = read_file(dir + "/out.gguf");
  const std::string bundled = read_file(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_EQ(produced.size(), bundled.size());
  EXPECT_TRUE(produced == bundled);

  // The converted file runs and gives the same text as the embedded copy.
  ProcessResult a =
      run_pagoda({"run", "-q", "-m", dir + "/out.gguf", "-p", "Once upon a time", "-n", "30", "--temp", "0"});
  ProcessResult b = run_pagoda({"run", "-q", "--threads", "1", "-p", "Once upon a time", "-n", "30", "--temp", "0"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(CliConvertTest, TruncatedCheckpointIsAClearError) {
  const std::string dir = make_temp_dir();
  const std::string ckpt = read_file(kAssets + "/stories260K.bin");
  write_file(dir + "/short.bin", ckpt.substr(0, ckpt.size() / 3));
  ProcessResult r =
      run_pagoda({"convert", "--from", "llama2c", dir + "/short.bin", kAssets + "/tok512.bin", "-o", dir + "/x.gguf"});
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("the header says the weights need"));

  write_file(dir + "/garbage.bin", std::string(64, '\xff'));
  ProcessResult g = run_pagoda(
      {"convert", "--from", "llama2c", dir + "/garbage.bin", kAssets + "/tok512.bin", "-o", dir + "/x.gguf"});
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_THAT(g.err, HasSubstr("not a llama2.c checkpoint"));

  write_file(dir + "/tok.bin", read_file(kAssets + "/tok512.bin").substr(0, 1000));
  ProcessResult t = run_pagoda(
      {"convert", "--from", "llama2c", kAssets + "/stories260K.bin", dir + "/tok.bin", "-o", dir + "/x.gguf"});
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_THAT(t.err, HasSubstr("tok.bin"));
}

TEST(CliConvertTest, UnsupportedSourceFormat) {
  ProcessResult r = run_pagoda({"convert", "--from", "onnx", "a", "b", "-o", "/tmp/x.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--from onnx is not supported"));
}

}  // namespace
}  // namespace pagoda::e2e
