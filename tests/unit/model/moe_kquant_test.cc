// K-quant experts (model/moe_ffn.cc) on gen-model's tiny-qwen35moe widened to whole 256-value super-blocks and
// quantized as llama-quantize's Q4_K_M (format/llama_quantizer.h: q4_K gate and up, q4_K or q6_K down, routed and
// shared experts alike), at every SIMD level:
// - with only the K-quant matmuls taken from the level (every other op scalar), the logits of a prefill and of
//   token-at-a-time decoding equal, bit for bit, the scalar reference's: the scalar kernels with every K-quant matrix
//   run through its f32 entry point (quantizing its own input, a token at a time over a slice of rows);
// - the experts run the x8 kernels on q8_K activations: a prefill calls no K-quant matmul's f32 entry point (that
//   entry quantizes its input on every call and takes one token at a time over a slice of rows).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "format/llama_quantizer.h"
#include "kernels/kernels.h"
#include "model/registry.h"
#include "support/chunked_prompt_logits.h"
#include "support/simd_levels.h"
#include "support/temp_dir_test.h"
#include "synth/model_shapes.h"
#include "synth/random_qwen35_writer.h"

namespace pagoda {
namespace {

constexpr int32_t kPromptLength = 24;
constexpr int32_t kVocab = 512;
constexpr DType kKquantTypes[] = {DType::kQ2_K,   DType::kQ3_K,   DType::kQ4_K,   DType::kQ5_K,   DType::kQ6_K,
                                  DType::kQ2_Kx8, DType::kQ3_Kx8, DType::kQ4_Kx8, DType::kQ5_Kx8, DType::kQ6_Kx8};

// The level whose K-quant matmuls the counting table forwards to, and how often their f32 entry points ran.
const kernels::KernelTable* forwarded_level = nullptr;
std::atomic<int64_t> f32_entry_calls{0};

template <DType kDType>
void counted_f32_entry(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  ++f32_entry_calls;
  forwarded_level->matmul_for(kDType).f32(w, x, y, num_out, num_in, num_tokens);
}

template <size_t... I>
void count_f32_entries(kernels::KernelTable& table, std::index_sequence<I...>) {
  ((table.matmul[size_t(kKquantTypes[I])].f32 = counted_f32_entry<kKquantTypes[I]>), ...);
}

class MoeKquantTest : public kernels::SimdLevelTest {
 protected:
  static void SetUpTestSuite() {
    std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-qwen35moe");
    ASSERT_TRUE(shape.has_value());
    shape->dim = 256;
    shape->head_dim = 64;
    shape->num_layers = 4;  // three gated DeltaNet layers, then gated attention
    shape->expert_hidden_dim = 256;
    shape->shared_expert_hidden_dim = 512;
    const std::string f32_path = testing_support::process_temp_path("moe-f32.gguf");
    const std::string q4_path = testing_support::process_temp_path("moe-q4_k_m.gguf");
    const Status written = synth::write_random_qwen35_model({*shape, format::GgmlType::kF32, 7, f32_path});
    ASSERT_TRUE(written.ok()) << written.message();
    format::LlamaQuantizeOptions q;
    q.input_path = f32_path;
    q.output_path = q4_path;
    q.file_type = format::LlamaFileType::kQ4_K_M;
    const auto quantized = format::quantize_gguf_llama(q);
    ASSERT_TRUE(quantized.ok()) << quantized.error();
    auto file = format::GgufFile::open(q4_path);
    ASSERT_TRUE(file.ok()) << file.error();
    file_ = std::make_unique<format::GgufFile>(std::move(*file));
    for (int32_t i = 0; i < kPromptLength; ++i) prompt_.push_back(TokenId((i * 37 + 11) % kVocab));
  }
  static void TearDownTestSuite() { file_.reset(); }

  void SetUp() override {
    SimdLevelTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_NE(file_, nullptr);
    // The scalar table with the level's K-quant matmuls, their f32 entry points counted.
    level_ = *kernels::kernels_for(kernels::Isa::kScalar);
    for (DType d : kKquantTypes) level_.matmul[size_t(d)] = simd_->matmul_for(d);
    forwarded_level = simd_;
    count_f32_entries(level_, std::make_index_sequence<std::size(kKquantTypes)>());
    reference_ = *kernels::kernels_for(kernels::Isa::kScalar);
    for (DType d : kKquantTypes) reference_.matmul[size_t(d)].q8_K = nullptr;
  }

  std::unique_ptr<Model> model(const kernels::KernelTable& table, const ModelOptions& options) const {
    auto m = create_model(*file_, table, options);
    EXPECT_TRUE(m.ok()) << m.error();
    return m.ok() ? std::move(*m) : nullptr;
  }

  static inline std::unique_ptr<format::GgufFile> file_;
  static inline std::vector<TokenId> prompt_;
  kernels::KernelTable level_;
  kernels::KernelTable reference_;  // scalar, the K-quants through their f32 entry points only
};
PAGODA_TEST_EVERY_SIMD_LEVEL(MoeKquantTest);

TEST_P(MoeKquantTest, TheExpertsAreKquants) {
  for (const char* name : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_gate_shexp.weight",
                           "blk.3.ffn_gate_exps.weight"}) {
    const format::GgufTensorInfo* t = file_->find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, format::GgmlType::kQ4_K) << name;
  }
  for (const char* name : {"blk.0.ffn_down_exps.weight", "blk.1.ffn_down_exps.weight", "blk.0.ffn_down_shexp.weight"}) {
    const format::GgufTensorInfo* t = file_->find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_TRUE(t->type == format::GgmlType::kQ4_K || t->type == format::GgmlType::kQ6_K) << name;
  }
}

TEST_P(MoeKquantTest, LogitsEqualTheScalarReferenceBitForBit) {
  const auto reference = model(reference_, {});
  const auto subject = model(level_, {});
  ASSERT_TRUE(reference && subject);
  for (int32_t chunk : {kPromptLength, 1}) {
    SCOPED_TRACE(::testing::Message() << "chunks of " << chunk);
    const std::vector<float> want = testing::chunked_prompt_logits(*reference, prompt_, chunk);
    const std::vector<float> got = testing::chunked_prompt_logits(*subject, prompt_, chunk);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "logit " << i;
  }
}

TEST_P(MoeKquantTest, APrefillRunsEveryKquantMatrixOnQ8KActivations) {
  const auto subject = model(level_, {});
  ASSERT_TRUE(subject);
  f32_entry_calls = 0;
  const std::vector<float> logits = testing::chunked_prompt_logits(*subject, prompt_, kPromptLength);
  EXPECT_EQ(logits.size(), size_t(kPromptLength) * kVocab);
  EXPECT_EQ(f32_entry_calls.load(), 0);
}

}  // namespace
}  // namespace pagoda
