// q2_K ... q6_K, iq4_nl, iq4_xs and mxfp4 run natively, through the real binary: a random-weight model of rows of whole
// super-blocks
// (gen-model's tiny-256 shape) with its matrices rewritten as random K-quant blocks, against the same model with
// those blocks dequantized exactly to f32: nothing is converted at load, and its perplexity and next-token
// distributions match the f32 model's up to the q8_K rounding of the activations (`perplexity --kl-base`); the
// fused forward ops give the unfused ones' logits bit for bit (q8_K activations quantized after the norm and per
// slice of the FFN's hidden row); and every kernel level runs it. iq2_xxs, iq2_xs and iq2_s matrices, carried in
// pagoda's q7_K (no conversion), match their dequantized model the same way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "format/ggml_dequantize.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using format::GgmlType;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kKquantStory = PAGODA_TEST_STORY;

const GgmlType kKquantTypes[] = {GgmlType::kQ4_K,   GgmlType::kQ5_K,   GgmlType::kQ6_K,  GgmlType::kQ2_K,
                                  GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4, GgmlType::kQ3_K};
const GgmlType kIq2Types[] = {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S};

// Writes `base`'s tensors to kquant_path with every matrix as `types` in turn (random quants and scales, fp16
// multipliers of +-2^-13, +-2^-10 for q2_K, q3_K, the IQ4 and the IQ2 types, MXFP4 scales 2^-8), and to f32_path
// with those matrices dequantized.
template <size_t kNumTypes>
void write_pair(const std::string& base, const std::string& kquant_path, const std::string& f32_path,
                const GgmlType (&types)[kNumTypes]) {
  auto file = format::GgufFile::open(base);
  ASSERT_TRUE(file.ok()) << file.error();
  format::GgufWriter kq, f32;
  for (const auto& [key, value] : file->metadata()) {
    kq.set(key, value);
    f32.set(key, value);
  }
  std::mt19937 rng(5);
  std::deque<std::vector<uint8_t>> keep;  // its elements stay where they are as it grows
  size_t next = 0;
  for (const format::GgufTensorInfo& t : file->tensors()) {
    if (t.dims.size() != 2 || t.dims[0] % 256 != 0) {
      kq.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      f32.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      continue;
    }
    const GgmlType type = types[next++ % std::size(types)];
    const size_t block_bytes = format::ggml_type_size(type);
    const int64_t block_values = int64_t(format::ggml_block_size(type));
    std::vector<uint8_t>& blocks = keep.emplace_back(size_t(t.num_elements() / block_values) * block_bytes);
    for (uint8_t& b : blocks) b = uint8_t(rng());
    for (size_t at = 0; at < blocks.size(); at += block_bytes) {
      const uint16_t d = rng() % 2 ? 0x0800 : 0x8800, dmin = rng() % 2 ? 0x0800 : 0x8800;
      const uint16_t d_iq4 = rng() % 2 ? 0x1400 : 0x9400;
      if (type == GgmlType::kQ6_K) {
        std::memcpy(&blocks[at + 208], &d, 2);
      } else if (type == GgmlType::kQ3_K) {
        std::memcpy(&blocks[at + 108], &d_iq4, 2);
      } else if (type == GgmlType::kQ2_K) {
        std::memcpy(&blocks[at + 80], &d_iq4, 2);
        std::memcpy(&blocks[at + 82], &d_iq4, 2);
      } else if (type == GgmlType::kIQ4_NL || type == GgmlType::kIQ4_XS || type == GgmlType::kIQ2_XXS ||
                 type == GgmlType::kIQ2_XS || type == GgmlType::kIQ2_S) {
        std::memcpy(&blocks[at], &d_iq4, 2);
      } else if (type == GgmlType::kMXFP4) {
        blocks[at] = 119;
      } else {
        std::memcpy(&blocks[at], &d, 2);
        std::memcpy(&blocks[at + 2], &dmin, 2);
      }
    }
    kq.add_tensor(t.name, type, t.dims, blocks.data(), blocks.size());
    std::vector<uint8_t>& values = keep.emplace_back(size_t(t.num_elements()) * sizeof(float));
    const int64_t row = t.dims[0];
    for (int64_t r = 0; r < t.num_elements() / row; ++r)
      format::dequantize_ggml_row(type, blocks.data() + size_t(r * row / block_values) * block_bytes,
                                  reinterpret_cast<float*>(values.data()) + r * row, row);
    f32.add_tensor(t.name, GgmlType::kF32, t.dims, values.data(), values.size());
  }
  ASSERT_GE(next, std::size(types)) << "every type is used";
  for (auto [writer, path] : {std::pair{&kq, kquant_path}, std::pair{&f32, f32_path}}) {
    const std::vector<uint8_t> bytes = writer->to_bytes();
    write_file(path, std::string(bytes.begin(), bytes.end()));
  }
}

class CliKquantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ProcessResult g =
        run_pagoda({"gen-model", "--shape", "tiny-256", "--type", "f32", "-o", dir_.path() + "/base.gguf"});
    ASSERT_EQ(g.exit_code, 0) << g.err;
    write_pair(dir_.path() + "/base.gguf", kquant_, f32_, kKquantTypes);
  }
  TempDir dir_;
  const std::string kquant_ = dir_.path() + "/kquant.gguf", f32_ = dir_.path() + "/f32.gguf";
};

TEST_F(CliKquantTest, RunsNativelyWithTheDequantizedModelsDistributions) {
  const ProcessResult r = run_pagoda(
      {"perplexity", "-m", kquant_, "-f", kKquantStory, "--ctx", "64", "--chunks", "6", "--kl-base", f32_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("converted at load")));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const double ppl = j["ppl"], base_ppl = j["kl"]["base_ppl"];
  EXPECT_LT(std::abs(ppl / base_ppl - 1.0), 0.005) << r.out;
  EXPECT_LT(double(j["kl"]["mean_kl"]), 0.001) << r.out;
  EXPECT_GT(double(j["kl"]["top1_agreement"]), 0.9) << r.out;
}

TEST_F(CliKquantTest, FusedAndUnfusedOpsGiveTheSameLogits) {
  // A prompt of several tokens (rows split over the threads) then decode steps, on two threads.
  std::string logits[2];
  for (int fused = 0; fused < 2; ++fused) {
    const std::string out = dir_.path() + (fused ? "/fused.logits" : "/plain.logits");
    std::vector<std::string> args = {"run", "-q", "-m", kquant_, "-p", "Once upon a time there was", "-n", "8",
                                     "--temp", "0", "--ignore-eos", "--threads", "2", "--logits-out", out};
    if (!fused) args.push_back("--no-fusion");
    const ProcessResult r = run_pagoda(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    logits[fused] = read_file(out);
  }
  ASSERT_FALSE(logits[0].empty());
  EXPECT_TRUE(logits[0] == logits[1]) << "fusion changed the K-quant model's logits";
}

TEST_F(CliKquantTest, EveryLevelGenerates) {
  // The kernels give every level the same bits (tests/unit/kernels); attention and the rest may round differently
  // per level, so the texts are not compared here.
  for (const char* isa : {"scalar", "avx2", "avx_vnni", "avx512"}) {
    const ProcessResult r = run_pagoda({"run", "-m", kquant_, "-p", "Once upon a time", "-n", "12", "--temp", "0"},
                                       {std::string("PAGODA_ISA=") + isa});
    ASSERT_EQ(r.exit_code, 0) << isa << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("Once upon a time")) << isa;
    EXPECT_GT(r.out.size(), std::string("Once upon a time").size()) << isa << ": some tokens were generated";
  }
}

TEST(CliIq2Test, RunsInQ7_KWithTheDequantizedModelsDistributions) {
  TempDir dir;
  const std::string base = dir.path() + "/base.gguf", iq2 = dir.path() + "/iq2.gguf", f32 = dir.path() + "/f32.gguf";
  const ProcessResult g = run_pagoda({"gen-model", "--shape", "tiny-256", "--type", "f32", "-o", base});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  write_pair(base, iq2, f32, kIq2Types);
  const ProcessResult r = run_pagoda(
      {"perplexity", "-m", iq2, "-f", kKquantStory, "--ctx", "64", "--chunks", "6", "--kl-base", f32, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("converted at load")));
  for (const char* carried : {"iq2_xxs as q7_K", "iq2_xs as q7_K", "iq2_s as q7_K"})
    EXPECT_THAT(r.err, HasSubstr(carried));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const double ppl = j["ppl"], base_ppl = j["kl"]["base_ppl"];
  EXPECT_LT(std::abs(ppl / base_ppl - 1.0), 0.005) << r.out;
  EXPECT_LT(double(j["kl"]["mean_kl"]), 0.001) << r.out;
  EXPECT_GT(double(j["kl"]["top1_agreement"]), 0.9) << r.out;
}

}  // namespace
}  // namespace pagoda::e2e
