// Gemma 4's forward pass (model/llama_model.cc with arch_gemma4.cc's switches) on gen-model's tiny-gemma4 GGUF
// (windowed and full layers of two head sizes, the last 3 layers reading earlier layers' K/V, per-layer token
// embeddings) and tiny-gemma4-moe (experts beside each layer's dense FFN, model/moe_ffn.cc), f32 and q8_0: a prompt that runs past the 16-position window gives every row the same logits, bit
// for bit, whole, in chunks, one token at a time, and when prefilled in part, dropped (preempted) and recomputed
// into other blocks of a cache that still holds the dropped rows; the flash kernels and the naive reference agree
// (closely in f32, within 2% of the logits' scale in q8_0). llama.cpp's tokens and perplexity on the same file are
// checked in tests/e2e/cli_model_families_test.cc and scripts/check/family_parity.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "format/gguf_quantizer.h"
#include "format/gguf_reader.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "model/llama_model.h"
#include "model/registry.h"
#include "support/temp_dir_test.h"
#include "synth/hf_random_model_writer.h"
#include "synth/model_shapes.h"

namespace pagoda {
namespace gemma4_prefill_test {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int32_t kPromptLength = 45;  // past the windowed layers' 16 positions
constexpr int32_t kVocab = 512;

// One prefill step: tokens [begin, begin + len) of the prompt at their positions, through `table`.
struct Step {
  int32_t begin;
  int32_t len;
};

// The shape, and whether its GGUF is quantized to q8_0.
using Param = std::tuple<const char*, bool>;

class Gemma4PrefillTest : public testing_support::TempDirTest, public ::testing::WithParamInterface<Param> {
 protected:
  static bool quantized() { return std::get<1>(GetParam()); }
  static bool moe() { return std::string(std::get<0>(GetParam())) == "tiny-gemma4-moe"; }

  void SetUp() override {
    TempDirTest::SetUp();
    std::optional<synth::ModelShape> shape = synth::find_model_shape(std::get<0>(GetParam()));
    ASSERT_TRUE(shape.has_value());
    synth::RandomHfModelOptions o;
    o.shape = *shape;
    o.seed = 7;
    o.gguf = true;
    o.output_path = path("tiny-gemma4.gguf");
    const Status written = synth::write_random_hf_model(o);
    ASSERT_TRUE(written.ok()) << written.message();
    std::string file_path = o.output_path;
    if (quantized()) {
      file_path = path("tiny-gemma4-q8_0.gguf");
      auto report = format::quantize_gguf({o.output_path, file_path, format::GgmlType::kQ8_0, nullptr});
      ASSERT_TRUE(report.ok()) << report.error();
    }
    auto file = format::GgufFile::open(file_path);
    ASSERT_TRUE(file.ok()) << file.error();
    file_ = std::make_unique<format::GgufFile>(std::move(*file));
    for (int32_t i = 0; i < kPromptLength; ++i) prompt_.push_back(TokenId((i * 37 + 11) % kVocab));
  }

  std::unique_ptr<Model> model(AttentionKind attention = AttentionKind::kFlash) {
    ModelOptions options;
    options.attention = attention;
    auto m = create_model(*file_, kernels::best_kernels(), options);
    EXPECT_TRUE(m.ok()) << m.error();
    return m.ok() ? std::move(*m) : nullptr;
  }

  // The logits of every token of `steps`, each step one forward of one sequence through `table` into `kv`.
  std::vector<float> run(const Model& m, KvStorage& kv, const std::vector<BlockId>& table,
                         const std::vector<Step>& steps) const {
    const int32_t num_blocks = int32_t(table.size());
    ThreadPool pool(2);
    Workspace ws(m.config(), kPromptLength, num_blocks * kBlockSize, kPromptLength, 2);
    std::vector<float> out;
    for (const Step& step : steps) {
      std::vector<Pos> positions(static_cast<size_t>(step.len));
      std::vector<int32_t> slots(static_cast<size_t>(step.len)), rows(static_cast<size_t>(step.len));
      for (int32_t i = 0; i < step.len; ++i) {
        const int32_t p = step.begin + i;
        positions[size_t(i)] = p;
        slots[size_t(i)] = table[size_t(p / kBlockSize)] * kBlockSize + p % kBlockSize;
        rows[size_t(i)] = i;
      }
      const int32_t seq_starts[] = {0, step.len}, context_lens[] = {step.begin + step.len};
      BatchView batch{std::span<const TokenId>(prompt_).subspan(size_t(step.begin), size_t(step.len)),
                      positions,
                      slots,
                      seq_starts,
                      context_lens,
                      BlockTableView{table.data(), 1, num_blocks},
                      rows,
                      {}};
      const LogitsView l = m.forward(batch, kv.view(), ws, pool);
      for (int32_t r = 0; r < l.num_rows; ++r) out.insert(out.end(), l.row(r).begin(), l.row(r).end());
    }
    return out;
  }

  // The whole prompt in steps of `chunk` tokens, into a fresh cache whose blocks are used in reverse order.
  std::vector<float> prefill(const Model& m, int32_t chunk) const {
    const int32_t num_blocks = (kPromptLength + kBlockSize - 1) / kBlockSize;
    KvStorage kv(m.config().kv_shape(), num_blocks, kBlockSize);
    std::vector<BlockId> table(static_cast<size_t>(num_blocks));
    std::iota(table.rbegin(), table.rend(), 0);
    std::vector<Step> steps;
    for (int32_t begin = 0; begin < kPromptLength; begin += chunk)
      steps.push_back({begin, std::min(chunk, kPromptLength - begin)});
    return run(m, kv, table, steps);
  }

  static float max_abs(const std::vector<float>& v) {
    float m = 0.0f;
    for (float x : v) m = std::max(m, std::fabs(x));
    return m;
  }
  static float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float m = 0.0f;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
  }

  std::unique_ptr<format::GgufFile> file_;
  std::vector<TokenId> prompt_;
};

TEST_P(Gemma4PrefillTest, WholeChunkedAndTokenByTokenPrefillsGiveTheSameLogitsFlashOrNaive) {
  auto flash = model();
  auto naive = model(AttentionKind::kNaive);
  ASSERT_TRUE(flash && naive);
  if (moe()) {
    ASSERT_GT(flash->config().num_experts, 0);
    ASSERT_TRUE(flash->config().moe_beside_dense_ffn);
  } else {
    ASSERT_GT(flash->config().num_kv_shared_layers, 0);
    ASSERT_GT(flash->config().per_layer_input_dim, 0);
  }
  const std::vector<float> whole = prefill(*flash, kPromptLength);
  ASSERT_EQ(whole.size(), size_t(kPromptLength) * kVocab);
  const float scale = max_abs(whole);
  ASSERT_GT(scale, 0.0f);
  for (int32_t chunk : {1, 7, 16}) EXPECT_EQ(max_diff(whole, prefill(*flash, chunk)), 0.0f) << chunk;
  // The two attention loops add in other orders. With q8_0 weights, a last-bit difference in an attention output can
  // move a value of the next matmul's q8_0 activations across a rounding step, and the post-norms rescale each
  // block's small output to the residual's size, so the logits part by up to about 1% of their scale.
  const float bound = (quantized() ? 2e-2f : 1e-4f) * scale;
  EXPECT_LE(max_diff(whole, prefill(*naive, kPromptLength)), bound) << "flash vs naive";
  EXPECT_LE(max_diff(whole, prefill(*naive, 5)), bound) << "flash vs naive in chunks of 5";
}

// As the scheduler preempts a sequence: its first 20 tokens are prefilled into some blocks, which are then freed
// (their rows stay in the cache) and the whole prompt is recomputed from position 0 into other blocks, one of them
// a block the dropped prefill wrote. Every row of the recomputation equals the whole prefill's.
TEST_P(Gemma4PrefillTest, PreemptedPrefillRecomputedInOtherBlocksGivesTheSameLogits) {
  auto m = model();
  ASSERT_TRUE(m);
  const std::vector<float> whole = prefill(*m, kPromptLength);
  KvStorage kv(m->config().kv_shape(), 6, kBlockSize);
  const std::vector<float> dropped = run(*m, kv, {0, 1, 2}, {{0, 12}, {12, 8}});
  ASSERT_EQ(dropped.size(), size_t(20) * kVocab);
  EXPECT_EQ(max_diff(std::vector<float>(whole.begin(), whole.begin() + 20 * kVocab), dropped), 0.0f);
  const std::vector<float> recomputed = run(*m, kv, {5, 1, 3}, {{0, 30}, {30, 15}});
  EXPECT_EQ(max_diff(whole, recomputed), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(DenseAndMoeF32AndQ8_0, Gemma4PrefillTest,
                         ::testing::Combine(::testing::Values("tiny-gemma4", "tiny-gemma4-moe"), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<Param>& p) {
                           return std::string(std::get<0>(p.param)) == "tiny-gemma4" ? (std::get<1>(p.param) ? "DenseQ8_0" : "DenseF32")
                                                                                    : (std::get<1>(p.param) ? "MoeQ8_0" : "MoeF32");
                         });

}  // namespace
}  // namespace gemma4_prefill_test
}  // namespace pagoda
