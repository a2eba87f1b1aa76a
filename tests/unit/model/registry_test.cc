// Loading errors of create_model / model_config_from_gguf / model_weights_from_gguf: each a clear message
// naming the key or tensor. Files are the bundled model rewritten in memory with one thing changed.
#include "model/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "core/half.h"
#include "format/gguf_quantizer.h"
#include "format/gguf_writer.h"
#include "kv/kv_storage.h"
#include "quant/block_awq_int4.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"
#include "support/temp_dir_test.h"

namespace pagoda {
namespace {

using ::testing::HasSubstr;

class RegistryTest : public testing_support::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    auto file = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
    ASSERT_TRUE(file.ok()) << file.error();
    base_ = std::make_unique<format::GgufFile>(std::move(file).value());
  }

  struct Edit {
    std::function<void(format::GgufWriter&)> metadata = {};       // after copying the metadata
    std::function<bool(const std::string&)> drop_key = {};        // metadata keys to leave out
    std::function<bool(const std::string&)> drop_tensor = {};     // tensors to leave out
    std::function<void(format::GgufWriter&)> extra_tensors = {};  // added at the end
  };

  // Rewrites the bundled model with `edit`, parses the result and tries to create a model from it.
  Result<std::unique_ptr<Model>> load_edited(const Edit& edit) {
    format::GgufWriter w;
    for (const auto& [key, value] : base_->metadata()) {
      if (edit.drop_key && edit.drop_key(key)) continue;
      w.set(key, value);
    }
    if (edit.metadata) edit.metadata(w);
    for (const format::GgufTensorInfo& t : base_->tensors()) {
      if (edit.drop_tensor && edit.drop_tensor(t.name)) continue;
      w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
    }
    if (edit.extra_tensors) edit.extra_tensors(w);
    bytes_ = w.to_bytes();
    auto file = format::GgufFile::from_memory(bytes_, "edited.gguf");
    if (!file.ok()) return file.status();
    file_ = std::make_unique<format::GgufFile>(std::move(file).value());
    return create_model(*file_, kernels::best_kernels());
  }

  // The next-token logits after "Once upon a time" (BOS + 4 tokens), on two threads.
  static std::vector<float> prompt_logits(const Model& m) {
    const TokenId tokens[] = {1, 403, 407, 261, 378};
    const Pos positions[] = {0, 1, 2, 3, 4};
    const int32_t slots[] = {0, 1, 2, 3, 4}, seq_starts[] = {0, 5}, context_lens[] = {5}, rows[] = {4};
    const BlockId table[] = {0};
    BatchView batch{tokens, positions, slots, seq_starts, context_lens, BlockTableView{table, 1, 1}, rows, {}};
    ThreadPool pool(2);
    KvStorage kv(m.config().kv_shape(), 1, 16);
    Workspace ws(m.config(), 8, 16, 1, 2);
    LogitsView l = m.forward(batch, kv.view(), ws, pool);
    return std::vector<float>(l.row(0).begin(), l.row(0).end());
  }
  static float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float max_diff = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
    return max_diff;
  }

  std::unique_ptr<format::GgufFile> base_;
  std::vector<uint8_t> bytes_;
  std::unique_ptr<format::GgufFile> file_;
  std::vector<float> scratch_;
  std::vector<uint16_t> halves_;
};

TEST_F(RegistryTest, TheBundledModelLoadsUnchanged) {
  auto model = load_edited({});
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_EQ((*model)->config().num_layers, 5);
}

TEST_F(RegistryTest, UnknownArchitectureIsNamed) {
  auto model = load_edited(
      {.metadata = [](format::GgufWriter& w) { w.set("general.architecture", format::GgufValue::string("gpt2")); }});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.error(), HasSubstr("unknown architecture 'gpt2'"));
}

TEST_F(RegistryTest, MissingHyperParameterIsNamed) {
  auto model = load_edited({.drop_key = [](const std::string& k) { return k == "llama.block_count"; }});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.error(), HasSubstr("llama.block_count"));
}

TEST_F(RegistryTest, HeadCountThatDoesNotDivideIsAnError) {
  auto model = load_edited(
      {.metadata = [](format::GgufWriter& w) { w.set("llama.attention.head_count_kv", format::GgufValue::u32(3)); }});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.error(), HasSubstr("head_count_kv"));
}

TEST_F(RegistryTest, MissingTensorIsNamed) {
  auto model = load_edited({.drop_tensor = [](const std::string& n) { return n == "blk.3.ffn_up.weight"; }});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.error(), HasSubstr("missing tensor blk.3.ffn_up.weight"));
}

TEST_F(RegistryTest, WrongShapeIsNamed) {
  scratch_.assign(64 * 64, 0.0f);
  auto model = load_edited({.drop_tensor = [](const std::string& n) { return n == "blk.0.attn_k.weight"; },
                            .extra_tensors =
                                [this](format::GgufWriter& w) {
                                  w.add_tensor("blk.0.attn_k.weight", format::GgmlType::kF32, {64, 64}, scratch_.data(),
                                               scratch_.size() * 4);
                                }});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.error(), HasSubstr("blk.0.attn_k.weight has shape [64, 64], expected [64, 32]"));
}

TEST_F(RegistryTest, Q8_0AndQ4_0WeightsLoadAndStayCloseToF32) {
  // Every 2-D tensor whose rows are whole 32-element blocks is quantized (ffn_down's 172-wide rows stay f32).
  auto f32_model = create_model(*base_, kernels::best_kernels());
  ASSERT_TRUE(f32_model.ok());
  const std::vector<float> reference = prompt_logits(**f32_model);
  for (format::GgmlType type : {format::GgmlType::kQ8_0, format::GgmlType::kQ4_0}) {
    std::vector<std::vector<uint8_t>> blocks;
    format::GgufWriter w;
    for (const auto& [key, value] : base_->metadata()) w.set(key, value);
    int32_t num_quantized = 0;
    for (const format::GgufTensorInfo& t : base_->tensors()) {
      if (t.dims.size() == 2 && t.dims[0] % 32 == 0) {
        const int64_t n = t.num_elements();
        blocks.emplace_back(size_t(format::ggml_row_bytes(type, uint64_t(n))));
        if (type == format::GgmlType::kQ8_0)
          quant::quantize_row_q8_0(static_cast<const float*>(t.data),
                                   reinterpret_cast<quant::BlockQ8_0*>(blocks.back().data()), n);
        else
          quant::quantize_row_q4_0(static_cast<const float*>(t.data),
                                   reinterpret_cast<quant::BlockQ4_0*>(blocks.back().data()), n);
        w.add_tensor(t.name, type, t.dims, blocks.back().data(), blocks.back().size());
        ++num_quantized;
      } else {
        w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      }
    }
    EXPECT_EQ(num_quantized, 1 + 5 * 6);  // token_embd and q, k, v, o, gate, up of each layer
    bytes_ = w.to_bytes();
    auto file = format::GgufFile::from_memory(bytes_, "quantized.gguf");
    ASSERT_TRUE(file.ok()) << file.error();
    auto model = create_model(*file, kernels::best_kernels());
    ASSERT_TRUE(model.ok()) << model.error();
    const std::vector<float> logits = prompt_logits(**model);
    const float max_diff = max_abs_diff(logits, reference);
    // Loose sanity bounds (measured: 0.23 for q8_0, 3.0 for q4_0 on logits of magnitude ~10); the quality
    // figures are perplexity and KL divergence. The greedy next token survives both quantizations.
    const auto argmax = [](const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
    EXPECT_EQ(argmax(logits), argmax(reference)) << format::ggml_type_name(type);
    EXPECT_LT(max_diff, type == format::GgmlType::kQ8_0 ? 0.5f : 6.0f) << format::ggml_type_name(type);
    EXPECT_GT(max_diff, 0.0f);
    {
      // The matrices are repacked into 8-row groups at load (rows of 32, 64 and 512: all of them); the file's
      // layout gives the same integers and scales, summed in another float order.
      ModelOptions plain_layout;
      plain_layout.repack_weights = false;
      auto unpacked = create_model(*file, kernels::best_kernels(), plain_layout);
      ASSERT_TRUE(unpacked.ok()) << unpacked.error();
      const std::vector<float> unpacked_logits = prompt_logits(**unpacked);
      EXPECT_EQ(argmax(unpacked_logits), argmax(logits));
      EXPECT_LT(max_abs_diff(unpacked_logits, logits), 1e-3f);
      for (const kernels::KernelTable* table :
           {kernels::kernels_for(kernels::Isa::kScalar), kernels::kernels_for(kernels::Isa::kAvx2)}) {
        if (table == nullptr) continue;
        auto other = create_model(*file, *table);
        ASSERT_TRUE(other.ok()) << other.error();
        EXPECT_LT(max_abs_diff(prompt_logits(**other), logits), 1e-3f) << kernels::isa_name(table->isa);
      }
      // From a real file the repack also drops the file's pages of each matrix it copied: the same bits, and a
      // second model from the same mapping (whose pages fault back in) too.
      const std::string path_on_disk = path(std::string(format::ggml_type_name(type)) + ".gguf");
      ASSERT_TRUE(w.write(path_on_disk).ok());
      auto mapped = format::GgufFile::open(path_on_disk);
      ASSERT_TRUE(mapped.ok()) << mapped.error();
      for (int round = 0; round < 2; ++round) {
        auto from_file = create_model(*mapped, kernels::best_kernels());
        ASSERT_TRUE(from_file.ok()) << from_file.error();
        EXPECT_EQ(prompt_logits(**from_file), logits) << "round " << round;
      }
      auto unpacked_from_file = create_model(*mapped, kernels::best_kernels(), plain_layout);
      ASSERT_TRUE(unpacked_from_file.ok());
      EXPECT_EQ(prompt_logits(**unpacked_from_file), unpacked_logits);
    }
  }
}

TEST_F(RegistryTest, Int8AndAwqInt4WeightsLoadAndStayCloseToF32) {
  auto f32_model = create_model(*base_, kernels::best_kernels());
  ASSERT_TRUE(f32_model.ok());
  const std::vector<float> reference = prompt_logits(**f32_model);
  for (format::GgmlType type : {format::GgmlType::kPagodaInt8, format::GgmlType::kPagodaAwqInt4G32}) {
    const std::string out = path("registry-quantized.gguf");
    auto report = format::quantize_gguf({PAGODA_TEST_BUNDLED_MODEL, out, type, nullptr});
    ASSERT_TRUE(report.ok()) << report.error();
    auto file = format::GgufFile::open(out);
    ASSERT_TRUE(file.ok()) << file.error();
    auto model = create_model(*file, kernels::best_kernels());
    ASSERT_TRUE(model.ok()) << model.error();
    const std::vector<float> logits = prompt_logits(**model);
    const auto argmax = [](const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
    EXPECT_EQ(argmax(logits), argmax(reference)) << format::ggml_type_name(type);
    const float max_diff = max_abs_diff(logits, reference);
    EXPECT_LT(max_diff, type == format::GgmlType::kPagodaInt8 ? 0.5f : 6.0f) << format::ggml_type_name(type);
    EXPECT_GT(max_diff, 0.0f);
  }
}

// With s = 2 on every input channel, Q(W diag(s)) holds the same integers as Q(W) with every d doubled (exact in
// fp16), and x / 2 quantizes to the same Q8_0 integers with d halved: the logits must be the same bits as with no
// input scale at all, which they are only if the forward pass applies input_scale.
TEST_F(RegistryTest, AwqInputScaleIsAppliedToTheActivations) {
  std::vector<std::vector<uint8_t>> owned;
  std::vector<std::vector<float>> inverse_scales;
  const auto build = [&](bool with_scales) {
    format::GgufWriter w;
    for (const auto& [key, value] : base_->metadata()) w.set(key, value);
    for (const format::GgufTensorInfo& t : base_->tensors()) {
      if (t.dims.size() != 2 || t.dims[0] % 32 != 0) {
        w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
        continue;
      }
      const bool scaled = with_scales && t.name != "token_embd.weight";
      std::vector<float> values(static_cast<const float*>(t.data),
                                static_cast<const float*>(t.data) + t.num_elements());
      if (scaled)
        for (float& v : values) v *= 2.0f;
      owned.emplace_back(size_t(format::ggml_row_bytes(format::GgmlType::kPagodaAwqInt4G32, uint64_t(t.dims[0])) *
                                uint64_t(t.dims[1])));
      quant::quantize_row_awq_int4(values.data(), owned.back().data(), t.num_elements(), 32);
      w.add_tensor(t.name, format::GgmlType::kPagodaAwqInt4G32, t.dims, owned.back().data(), owned.back().size());
      if (scaled) {
        inverse_scales.emplace_back(size_t(t.dims[0]), 0.5f);
        w.add_tensor(format::awq_input_scale_name(t.name), format::GgmlType::kF32, {t.dims[0]},
                     inverse_scales.back().data(), inverse_scales.back().size() * sizeof(float));
      }
    }
    return w.to_bytes();
  };
  const std::vector<uint8_t> plain_bytes = build(false), scaled_bytes = build(true);
  auto plain_file = format::GgufFile::from_memory(plain_bytes, "plain.gguf");
  auto scaled_file = format::GgufFile::from_memory(scaled_bytes, "scaled.gguf");
  ASSERT_TRUE(plain_file.ok() && scaled_file.ok());
  EXPECT_NE(scaled_file->find_tensor("blk.0.attn_q.input_scale"), nullptr);
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2}) {
    const kernels::KernelTable* table = kernels::kernels_for(isa);
    if (table == nullptr) continue;
    auto plain = create_model(*plain_file, *table);
    auto scaled = create_model(*scaled_file, *table);
    ASSERT_TRUE(plain.ok() && scaled.ok()) << (plain.ok() ? scaled.error() : plain.error());
    EXPECT_EQ(prompt_logits(**plain), prompt_logits(**scaled)) << kernels::isa_name(isa);
  }
}

TEST_F(RegistryTest, InputScaleOnlyWithAwqWeights) {
  const std::vector<float> ones(64, 1.0f);
  auto on_f32 = load_edited({.extra_tensors = [&](format::GgufWriter& w) {
    w.add_tensor("blk.0.attn_q.input_scale", format::GgmlType::kF32, {64}, ones.data(), 64 * sizeof(float));
  }});
  ASSERT_FALSE(on_f32.ok());
  EXPECT_THAT(on_f32.error(), HasSubstr("blk.0.attn_q.weight is f32, but only AWQ INT4 weights take an input scale"));
}

TEST_F(RegistryTest, F16WeightsLoadAndGiveNearlyTheSameLogits) {
  // Every 2-D tensor converted to f16: the model must load and run (weights stay f16 in the mapping).
  std::vector<std::vector<uint16_t>> converted;
  format::GgufWriter w;
  for (const auto& [key, value] : base_->metadata()) w.set(key, value);
  for (const format::GgufTensorInfo& t : base_->tensors()) {
    if (t.dims.size() == 2) {
      const float* src = static_cast<const float*>(t.data);
      converted.emplace_back(size_t(t.num_elements()));
      for (size_t i = 0; i < converted.back().size(); ++i) converted.back()[i] = float_to_fp16(src[i]);
      w.add_tensor(t.name, format::GgmlType::kF16, t.dims, converted.back().data(), converted.back().size() * 2);
    } else {
      w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
    }
  }
  bytes_ = w.to_bytes();
  auto file = format::GgufFile::from_memory(bytes_, "f16.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  auto model = create_model(*file, kernels::best_kernels());
  ASSERT_TRUE(model.ok()) << model.error();
  auto f32_model = create_model(*base_, kernels::best_kernels());
  ASSERT_TRUE(f32_model.ok());
  const float max_diff = max_abs_diff(prompt_logits(**model), prompt_logits(**f32_model));
  EXPECT_LT(max_diff, 0.05f);
  EXPECT_GT(max_diff, 0.0f);  // it really ran on the f16 copy
}

}  // namespace
}  // namespace pagoda
