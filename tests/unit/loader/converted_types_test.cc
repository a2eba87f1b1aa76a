// GGUF files with tensors of the types pagoda converts at load (q8_K):
// a random-weight model whose matrices use it loads through load_model, says what it
// converted, and computes the same logits, bit for bit, as the same model written with the conversion done by hand
// (each row dequantized, then quantized to q8_0; vectors as f32), at every kernel level the CPU has. The carried types
// (tq1_0, tq2_0; iq3_xxs, iq3_s, iq1_s; q5_0) load re-encoded in q2_K, q6_K or q8_0, computing what the file
// re-encoded by hand computes; iq2_xxs, iq2_xs and iq2_s in pagoda's in-memory q7_K, holding the file's values bit for bit and computing
// the scalar level's logits, to f32 rounding, at every level. A type pagoda cannot run is refused with its name and
// the tensor's. q4_1 and q5_1 run as stored: their tensors stay in the file's mapping, the note names no conversion,
// and every level computes the scalar level's logits (to f32 rounding).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "format/ggml_carrier.h"
#include "format/ggml_dequantize.h"
#include "format/gguf_writer.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "loader/loaded_model.h"
#include "model/model_weights.h"
#include "model/tensor_set.h"
#include "model/workspace.h"
#include "quant/block_q8_0.h"
#include "support/simd_levels.h"
#include "synth/random_model_writer.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using format::GgmlType;
using ::testing::HasSubstr;
using ::testing::Not;

// Where each converted type keeps its scales, so random quant bytes get finite, small ones: fp16 fields at these
// byte offsets (q8_K's f32 d and mxfp4's exponent byte are set apart).
std::vector<size_t> fp16_scale_offsets(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: return {0, 2};
    case GgmlType::kQ5_0:
    case GgmlType::kIQ4_NL:
    case GgmlType::kIQ4_XS:
    case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS:
    case GgmlType::kIQ2_S: return {0};
    case GgmlType::kQ2_K: return {80, 82};
    case GgmlType::kQ3_K: return {108};
    case GgmlType::kQ6_K: return {208};
    case GgmlType::kIQ3_XXS:
    case GgmlType::kIQ3_S:
    case GgmlType::kIQ1_S: return {0};
    case GgmlType::kTQ1_0: return {52};
    case GgmlType::kTQ2_0: return {64};
    default: return {};
  }
}

// Random blocks of `type` whose values stay within about +-0.2.
std::vector<uint8_t> random_blocks(GgmlType type, int64_t num_elements, std::mt19937& rng) {
  const size_t block_bytes = format::ggml_type_size(type);
  std::vector<uint8_t> bytes(size_t(num_elements) / format::ggml_block_size(type) * block_bytes);
  for (uint8_t& b : bytes) b = uint8_t(rng());
  for (size_t at = 0; at < bytes.size(); at += block_bytes) {
    for (size_t offset : fp16_scale_offsets(type)) {
      // (iq1_s's and iq2's d / 8 must stay exact in fp16 for their q6_K and q7_K carriers.)
      const bool eighths = type == GgmlType::kIQ1_S || type == GgmlType::kIQ2_XXS || type == GgmlType::kIQ2_XS ||
                           type == GgmlType::kIQ2_S;
      const float base = eighths ? 1.0e-3f : 1.0e-4f;
      const uint16_t d = float_to_fp16((rng() % 2 ? 1.0f : -1.0f) * base * float(1 + rng() % 8));
      std::memcpy(&bytes[at + offset], &d, 2);
    }
    if (type == GgmlType::kQ8_K) {
      const float d = 1.0e-3f;
      std::memcpy(&bytes[at], &d, 4);
    }
    if (type == GgmlType::kMXFP4) bytes[at] = uint8_t(118 + rng() % 4);  // 2^-9 .. 2^-6
  }
  return bytes;
}

class ConvertedTypesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("converted_types_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    synth::RandomModelOptions o;
    o.shape = synth::ModelShape{.name = "k256",
                                .dim = 256,
                                .hidden_dim = 512,
                                .num_layers = 2,
                                .num_heads = 4,
                                .num_kv_heads = 2,
                                .vocab_size = 256,
                                .context_length = 64};
    o.output_path = (dir_ / "f32.gguf").string();
    const Status st = synth::write_random_model(o);
    ASSERT_TRUE(st.ok()) << st.message();
    auto base = format::GgufFile::open(o.output_path);
    ASSERT_TRUE(base.ok()) << base.error();
    base_ = std::make_unique<format::GgufFile>(std::move(base).value());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The next-token logits of a 4-token prompt.
  static std::vector<float> prompt_logits(const Model& m) {
    const TokenId tokens[] = {1, 40, 7, 200};
    const Pos positions[] = {0, 1, 2, 3};
    const int32_t slots[] = {0, 1, 2, 3}, seq_starts[] = {0, 4}, context_lens[] = {4}, rows[] = {3};
    const BlockId table[] = {0};
    BatchView batch{tokens, positions, slots, seq_starts, context_lens, BlockTableView{table, 1, 1}, rows, {}};
    ThreadPool pool(2);
    KvStorage kv(m.config().kv_shape(), 1, 16);
    Workspace ws(m.config(), 8, 16, 1, 2);
    LogitsView l = m.forward(batch, kv.view(), ws, pool);
    return std::vector<float>(l.row(0).begin(), l.row(0).end());
  }

  fs::path dir_;
  std::unique_ptr<format::GgufFile> base_;
};

TEST_F(ConvertedTypesTest, EveryConvertedTypeLoadsAsItsQ8_0Conversion) {
  // (q4_K, q5_K, q6_K, iq4_nl, iq4_xs and mxfp4 run as stored: tests/e2e/cli_kquant_test.cc.)
  const GgmlType types[] = {GgmlType::kQ8_K};
  std::mt19937 rng(41);
  format::GgufWriter quantized, by_hand;
  for (const auto& [key, value] : base_->metadata()) {
    quantized.set(key, value);
    by_hand.set(key, value);
  }
  std::vector<std::vector<uint8_t>> keep;  // the writers borrow the bytes until written
  size_t next_type = 0;
  for (const format::GgufTensorInfo& t : base_->tensors()) {
    // Every matrix and output_norm (a vector in a converted type: kept as f32) take the types in turn.
    const bool convert = t.dims.size() == 2 || t.name == "output_norm.weight";
    if (!convert) {
      quantized.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      by_hand.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      continue;
    }
    const GgmlType type = t.dims.size() == 2 ? types[next_type++ % std::size(types)] : GgmlType::kQ8_K;
    const int64_t row_len = t.dims[0], num_rows = t.num_elements() / row_len;
    keep.push_back(random_blocks(type, t.num_elements(), rng));
    const std::vector<uint8_t>& src = keep.back();
    quantized.add_tensor(t.name, type, t.dims, src.data(), src.size());
    // The conversion tensor_set.h describes, written out: exact dequantization, then q8_0 rows (f32 for a vector).
    std::vector<float> values(size_t(t.num_elements()));
    const size_t src_row_bytes = format::ggml_row_bytes(type, uint64_t(row_len));
    for (int64_t r = 0; r < num_rows; ++r)
      format::dequantize_ggml_row(type, src.data() + size_t(r) * src_row_bytes, values.data() + r * row_len, row_len);
    if (t.dims.size() == 1) {
      keep.emplace_back(values.size() * 4);
      std::memcpy(keep.back().data(), values.data(), keep.back().size());
      by_hand.add_tensor(t.name, GgmlType::kF32, t.dims, keep.back().data(), keep.back().size());
    } else {
      keep.emplace_back(format::ggml_row_bytes(GgmlType::kQ8_0, uint64_t(t.num_elements())));
      quant::quantize_row_q8_0(values.data(), reinterpret_cast<quant::BlockQ8_0*>(keep.back().data()),
                               t.num_elements());
      by_hand.add_tensor(t.name, GgmlType::kQ8_0, t.dims, keep.back().data(), keep.back().size());
    }
  }
  ASSERT_GE(next_type, std::size(types)) << "every type is used at least once";
  const std::string quantized_path = (dir_ / "quantized.gguf").string(),
                    by_hand_path = (dir_ / "by_hand.gguf").string();
  ASSERT_TRUE(quantized.write(quantized_path).ok());
  ASSERT_TRUE(by_hand.write(by_hand_path).ok());

  Result<LoadedModel> converted = load_model(quantized_path, kernels::best_kernels());
  ASSERT_TRUE(converted.ok()) << converted.error();
  Result<LoadedModel> reference = load_model(by_hand_path, kernels::best_kernels());
  ASSERT_TRUE(reference.ok()) << reference.error();
  EXPECT_THAT(converted->weights_note, HasSubstr("converted at load"));
  EXPECT_THAT(converted->weights_note, HasSubstr("q8_K"));
  EXPECT_THAT(converted->weights_note, HasSubstr("q8_0"));
  EXPECT_EQ(reference->weights_note, "") << "q8_0 and f32 run as stored";
  const std::vector<float> logits = prompt_logits(*converted->model);
  EXPECT_EQ(logits, prompt_logits(*reference->model));
  float max_abs = 0.0f;
  for (float v : logits) max_abs = std::max(max_abs, std::fabs(v));
  EXPECT_GT(max_abs, 0.0f) << "the random weights give a forward that is not all zero";
  EXPECT_TRUE(std::isfinite(max_abs));
  // The loader requantizes with the kernel table's quantize_row_q8_0: every level's gives the reference's bytes, so
  // each level computes the logits of the hand-converted file run on that level.
  for (kernels::Isa isa : kernels::kAllLevels) {
    const kernels::KernelTable* table = kernels::kernels_for(isa);
    if (table == nullptr) {
      std::printf("[ NOTE     ] %s is not available on this CPU: not compared\n", kernels::isa_name(isa).data());
      continue;
    }
    Result<LoadedModel> at_level = load_model(quantized_path, *table);
    ASSERT_TRUE(at_level.ok()) << at_level.error();
    Result<LoadedModel> reference_at_level = load_model(by_hand_path, *table);
    ASSERT_TRUE(reference_at_level.ok()) << reference_at_level.error();
    EXPECT_EQ(prompt_logits(*at_level->model), prompt_logits(*reference_at_level->model)) << kernels::isa_name(isa);
  }
}

TEST_F(ConvertedTypesTest, TheConversionOfEachTensorShape) {
  // A q8_K matrix whose values pass q8_0's fp16 scale range (127 * 65504) becomes f32 of its exact values; a q5_0
  // matrix is carried in q8_0 with the file's d and values; a q5_1 matrix, a q4_1 vector, a q8_0 and a q6_K matrix
  // stay in the file's mapping.
  std::mt19937 rng(7);
  const std::vector<uint8_t> q51 = random_blocks(GgmlType::kQ5_1, 512, rng);
  const std::vector<uint8_t> q50 = random_blocks(GgmlType::kQ5_0, 512, rng);
  const std::vector<uint8_t> q6k = random_blocks(GgmlType::kQ6_K, 512, rng);
  const std::vector<uint8_t> q41 = random_blocks(GgmlType::kQ4_1, 64, rng);
  std::vector<uint8_t> q8k = random_blocks(GgmlType::kQ8_K, 512, rng);
  const float huge = 1.0e6f;  // values up to 1.27e8
  std::memcpy(q8k.data(), &huge, 4);
  std::vector<uint8_t> q80(2 * 34, 0);
  format::GgufWriter w;
  w.add_tensor("m5", GgmlType::kQ5_1, {256, 2}, q51.data(), q51.size());
  w.add_tensor("v", GgmlType::kQ4_1, {64}, q41.data(), q41.size());
  w.add_tensor("big", GgmlType::kQ8_K, {256, 2}, q8k.data(), q8k.size());
  w.add_tensor("plain", GgmlType::kQ8_0, {32, 2}, q80.data(), q80.size());
  w.add_tensor("k6", GgmlType::kQ6_K, {256, 2}, q6k.data(), q6k.size());
  w.add_tensor("c5", GgmlType::kQ5_0, {256, 2}, q50.data(), q50.size());
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto file = format::GgufFile::from_memory(bytes, "shapes.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  const TensorSet set = tensor_set_from_gguf(*file);
  EXPECT_EQ(set.owned.size(), 2u);

  const TensorRef* m5 = set.find("m5");
  ASSERT_NE(m5, nullptr);
  EXPECT_EQ(m5->dtype, DType::kQ5_1);
  EXPECT_EQ(m5->data, file->tensors()[0].data) << "the q5_1 kernels run it from the mapping";

  const TensorRef* v = set.find("v");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->dtype, DType::kQ4_1);
  EXPECT_EQ(v->data, file->tensors()[1].data) << "a vector is dequantized by the model, as a q4_K one";

  const TensorRef* big = set.find("big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->dtype, DType::kF32);
  std::vector<float> big_exact(512);
  format::dequantize_ggml_row(GgmlType::kQ8_K, q8k.data(), big_exact.data(), 512);
  EXPECT_EQ(std::memcmp(big->data, big_exact.data(), 512 * sizeof(float)), 0);

  const TensorRef* plain = set.find("plain");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->dtype, DType::kQ8_0);
  EXPECT_EQ(plain->data, file->tensors()[3].data) << "runs from the mapping";

  const TensorRef* k6 = set.find("k6");
  ASSERT_NE(k6, nullptr);
  EXPECT_EQ(k6->dtype, DType::kQ6_K);
  EXPECT_EQ(k6->data, file->tensors()[4].data) << "a K-quant kernel runs it from the mapping";

  const TensorRef* c5 = set.find("c5");
  ASSERT_NE(c5, nullptr);
  EXPECT_EQ(c5->dtype, DType::kQ8_0);
  EXPECT_EQ(c5->type_name, "q5_0");
  std::vector<float> c5_exact(512), c5_carried(512);
  format::dequantize_ggml_row(GgmlType::kQ5_0, q50.data(), c5_exact.data(), 512);
  format::dequantize_ggml_row(GgmlType::kQ8_0, c5->data, c5_carried.data(), 512);
  EXPECT_EQ(c5_carried, c5_exact);
  const auto* c5_blocks = static_cast<const quant::BlockQ8_0*>(c5->data);
  for (int b = 0; b < 16; ++b) {
    uint16_t d;
    std::memcpy(&d, q50.data() + 22 * b, 2);
    EXPECT_EQ(c5_blocks[b].d, d) << "block " << b << " keeps the file's scale";
  }

  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("converted at load: 1 tensor (1 q8_K)"));
  EXPECT_THAT(tensor_conversion_note(*file), Not(HasSubstr("q4_1")));
  EXPECT_THAT(tensor_conversion_note(*file), Not(HasSubstr("q5_1")));
  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("1 q5_0 as q8_0"));
}

TEST_F(ConvertedTypesTest, EveryCarriedTypeLoadsAsItsCarrier) {
  // tq1_0 and tq2_0 matrices load re-encoded as q2_K, iq3_xxs, iq3_s and iq1_s ones as q6_K, q5_0 ones as q8_0,
  // computing the logits of the file re-encoded by hand at every kernel level, and the carried values are the file's.
  const GgmlType types[] = {GgmlType::kTQ1_0, GgmlType::kTQ2_0, GgmlType::kIQ3_XXS,
                            GgmlType::kIQ3_S, GgmlType::kIQ1_S,  GgmlType::kQ5_0};
  std::mt19937 rng(43);
  format::GgufWriter quantized, by_hand;
  for (const auto& [key, value] : base_->metadata()) {
    quantized.set(key, value);
    by_hand.set(key, value);
  }
  std::vector<std::vector<uint8_t>> keep;
  size_t next_type = 0;
  for (const format::GgufTensorInfo& t : base_->tensors()) {
    if (t.dims.size() != 2) {
      quantized.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      by_hand.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      continue;
    }
    const GgmlType type = types[next_type++ % std::size(types)];
    const int64_t row_len = t.dims[0], num_rows = t.num_elements() / row_len;
    keep.push_back(random_blocks(type, t.num_elements(), rng));
    const uint8_t* src = keep.back().data();  // the buffer stays put when keep grows; its element does not
    quantized.add_tensor(t.name, type, t.dims, src, keep.back().size());
    const size_t src_row_bytes = format::ggml_row_bytes(type, uint64_t(row_len));
    // These carriers are GGUF types too, so the file re-encoded by hand can hold them.
    const DType carrier_dtype = *format::ggml_carrier_type(type);
    ASSERT_TRUE(carrier_dtype == DType::kQ2_K || carrier_dtype == DType::kQ6_K || carrier_dtype == DType::kQ8_0);
    const GgmlType carrier = carrier_dtype == DType::kQ2_K   ? GgmlType::kQ2_K
                             : carrier_dtype == DType::kQ6_K ? GgmlType::kQ6_K
                                                             : GgmlType::kQ8_0;
    const size_t dst_row_bytes = format::ggml_row_bytes(carrier, uint64_t(row_len));
    keep.emplace_back(dst_row_bytes * size_t(num_rows));
    for (int64_t r = 0; r < num_rows; ++r)
      ASSERT_TRUE(format::carry_ggml_row(type, src + size_t(r) * src_row_bytes,
                                         keep.back().data() + size_t(r) * dst_row_bytes, row_len));
    by_hand.add_tensor(t.name, carrier, t.dims, keep.back().data(), keep.back().size());
    // The carrier's values are the file's.
    std::vector<float> want(static_cast<size_t>(row_len)), got(static_cast<size_t>(row_len));
    format::dequantize_ggml_row(type, src, want.data(), row_len);
    format::dequantize_ggml_row(carrier, keep.back().data(), got.data(), row_len);
    EXPECT_EQ(got, want) << t.name;
  }
  const std::string quantized_path = (dir_ / "quantized.gguf").string(),
                    by_hand_path = (dir_ / "by_hand.gguf").string();
  ASSERT_TRUE(quantized.write(quantized_path).ok());
  ASSERT_TRUE(by_hand.write(by_hand_path).ok());
  auto file = format::GgufFile::open(quantized_path);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("re-encoded losslessly at load for another type's kernels"));
  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("tq1_0 as q2_K"));
  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("tq2_0 as q2_K"));
  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("iq3_s as q6_K"));
  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("q5_0 as q8_0"));
  for (kernels::Isa isa : kernels::kAllLevels) {
    const kernels::KernelTable* table = kernels::kernels_for(isa);
    if (table == nullptr) {
      std::printf("[ NOTE     ] %s is not available on this CPU: not compared\n", kernels::isa_name(isa).data());
      continue;
    }
    Result<LoadedModel> carried = load_model(quantized_path, *table);
    ASSERT_TRUE(carried.ok()) << carried.error();
    Result<LoadedModel> reference = load_model(by_hand_path, *table);
    ASSERT_TRUE(reference.ok()) << reference.error();
    const std::vector<float> logits = prompt_logits(*carried->model);
    EXPECT_EQ(logits, prompt_logits(*reference->model)) << kernels::isa_name(isa);
    float max_abs = 0.0f;
    for (float v : logits) max_abs = std::max(max_abs, std::fabs(v));
    EXPECT_GT(max_abs, 0.0f);
    EXPECT_TRUE(std::isfinite(max_abs));
  }
}

TEST_F(ConvertedTypesTest, Q4_1AndQ5_1RunAsStored) {
  // Every matrix in q4_1 or q5_1 in turn, output_norm a q4_1 vector: nothing is converted, the matrices stay in the
  // file's mapping (repacked at load where a level's layout asks for it), and every kernel level computes the
  // scalar level's logits up to the activations' q8_0 rounding (the q4_1/q5_1 matmuls give every level the scalar
  // bits, tests/unit/kernels/matmul_legacy_test.cc; attention and the other ops may round differently per level, and
  // the next layer's q8_0 activations turn an ulp into a quantization step on these near-zero logits). The
  // scalar logits are those of the f32 model holding the file's dequantized weights, up to the activations' q8_0
  // rounding.
  const GgmlType types[] = {GgmlType::kQ4_1, GgmlType::kQ5_1};
  std::mt19937 rng(43);
  format::GgufWriter quantized, dequantized;
  for (const auto& [key, value] : base_->metadata()) {
    quantized.set(key, value);
    dequantized.set(key, value);
  }
  std::vector<std::vector<uint8_t>> keep;
  size_t next_type = 0;
  for (const format::GgufTensorInfo& t : base_->tensors()) {
    if (t.dims.size() != 2 && t.name != "output_norm.weight") {
      quantized.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      dequantized.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      continue;
    }
    const GgmlType type = t.dims.size() == 2 ? types[next_type++ % std::size(types)] : GgmlType::kQ4_1;
    keep.push_back(random_blocks(type, t.num_elements(), rng));
    const std::vector<uint8_t>& src = keep.back();
    quantized.add_tensor(t.name, type, t.dims, src.data(), src.size());
    std::vector<uint8_t> values(size_t(t.num_elements()) * 4);
    const int64_t row_len = t.dims[0], num_rows = t.num_elements() / row_len;
    for (int64_t r = 0; r < num_rows; ++r)
      format::dequantize_ggml_row(type, src.data() + size_t(r) * format::ggml_row_bytes(type, uint64_t(row_len)),
                                  reinterpret_cast<float*>(values.data()) + r * row_len, row_len);
    keep.push_back(std::move(values));
    dequantized.add_tensor(t.name, GgmlType::kF32, t.dims, keep.back().data(), keep.back().size());
  }
  ASSERT_GE(next_type, std::size(types));
  const std::string path = (dir_ / "q41_q51.gguf").string(), f32_path = (dir_ / "dequantized.gguf").string();
  ASSERT_TRUE(quantized.write(path).ok());
  ASSERT_TRUE(dequantized.write(f32_path).ok());
  auto file = format::GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(tensor_conversion_note(*file), "");
  const TensorSet set = tensor_set_from_gguf(*file);
  EXPECT_TRUE(set.owned.empty());
  for (const format::GgufTensorInfo& t : file->tensors()) {
    const TensorRef* r = set.find(t.name);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->data, t.data) << t.name << " runs from the mapping";
    if (t.type == GgmlType::kQ4_1) EXPECT_EQ(r->dtype, DType::kQ4_1) << t.name;
    if (t.type == GgmlType::kQ5_1) EXPECT_EQ(r->dtype, DType::kQ5_1) << t.name;
  }
  Result<LoadedModel> scalar = load_model(path, *kernels::kernels_for(kernels::Isa::kScalar));
  ASSERT_TRUE(scalar.ok()) << scalar.error();
  EXPECT_EQ(scalar->weights_note, "");
  const std::vector<float> want = prompt_logits(*scalar->model);
  float max_abs = 0.0f;
  for (float v : want) max_abs = std::max(max_abs, std::fabs(v));
  EXPECT_GT(max_abs, 0.0f);
  EXPECT_TRUE(std::isfinite(max_abs));
  Result<LoadedModel> f32 = load_model(f32_path, *kernels::kernels_for(kernels::Isa::kScalar));
  ASSERT_TRUE(f32.ok()) << f32.error();
  const std::vector<float> exact = prompt_logits(*f32->model);
  ASSERT_EQ(exact.size(), want.size());
  double err = 0.0, norm = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += double(want[i] - exact[i]) * double(want[i] - exact[i]);
    norm += double(exact[i]) * double(exact[i]);
  }
  EXPECT_LT(std::sqrt(err / norm), 0.05) << "q8_0 activations move the logits by a few percent at most";
  for (kernels::Isa isa : kernels::kAllLevels) {
    const kernels::KernelTable* table = kernels::kernels_for(isa);
    if (table == nullptr) {
      std::printf("[ NOTE     ] %s is not available on this CPU: not compared\n", kernels::isa_name(isa).data());
      continue;
    }
    Result<LoadedModel> at_level = load_model(path, *table);
    ASSERT_TRUE(at_level.ok()) << at_level.error();
    const std::vector<float> got = prompt_logits(*at_level->model);
    ASSERT_EQ(got.size(), want.size()) << kernels::isa_name(isa);
    double diff = 0.0;
    for (size_t i = 0; i < want.size(); ++i) diff += double(got[i] - want[i]) * double(got[i] - want[i]);
    EXPECT_LT(std::sqrt(diff / norm), 0.05) << kernels::isa_name(isa);
  }
}

TEST_F(ConvertedTypesTest, Iq2TypesLoadInQ7_KWithTheFilesValues) {
  // q7_K is no GGUF type, so there is no file re-encoded by hand: the loaded tensors hold the file's dequantized
  // values bit for bit, and every kernel level computes the scalar level's logits from them (to f32 rounding).
  const GgmlType types[] = {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S};
  std::mt19937 rng(47);
  format::GgufWriter quantized;
  for (const auto& [key, value] : base_->metadata()) quantized.set(key, value);
  std::vector<std::vector<uint8_t>> keep;
  std::map<std::string, GgmlType> type_of;
  size_t next_type = 0;
  for (const format::GgufTensorInfo& t : base_->tensors()) {
    if (t.dims.size() != 2) {
      quantized.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      continue;
    }
    const GgmlType type = types[next_type++ % std::size(types)];
    keep.push_back(random_blocks(type, t.num_elements(), rng));
    quantized.add_tensor(t.name, type, t.dims, keep.back().data(), keep.back().size());
    type_of[t.name] = type;
  }
  ASSERT_GE(next_type, std::size(types));
  const std::string path = (dir_ / "iq2.gguf").string();
  ASSERT_TRUE(quantized.write(path).ok());
  auto file = format::GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("iq2_xxs as q7_K"));
  EXPECT_THAT(tensor_conversion_note(*file), HasSubstr("iq2_s as q7_K"));
  EXPECT_THAT(tensor_conversion_note(*file), Not(HasSubstr("converted at load")));
  const TensorSet set = tensor_set_from_gguf(*file);
  for (const auto& [name, type] : type_of) {
    const TensorRef* r = set.find(name);
    const format::GgufTensorInfo* info = file->find_tensor(name);
    ASSERT_NE(r, nullptr);
    ASSERT_NE(info, nullptr);
    ASSERT_EQ(r->dtype, DType::kQ7_K) << name;
    const int64_t row_len = r->dims[0], num_rows = info->num_elements() / row_len;
    std::vector<float> want(static_cast<size_t>(row_len)), got(static_cast<size_t>(row_len));
    for (int64_t row = 0; row < num_rows; ++row) {
      format::dequantize_ggml_row(
          type, static_cast<const uint8_t*>(info->data) + row * format::ggml_row_bytes(type, uint64_t(row_len)),
          want.data(), row_len);
      dequantize_row(DType::kQ7_K, static_cast<const uint8_t*>(r->data) + row * dtype_row_bytes(DType::kQ7_K, row_len),
                     got.data(), row_len);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << name << " row " << row;
    }
  }
  Result<LoadedModel> scalar = load_model(path, *kernels::kernels_for(kernels::Isa::kScalar));
  ASSERT_TRUE(scalar.ok()) << scalar.error();
  EXPECT_THAT(scalar->weights_note, HasSubstr("re-encoded losslessly"));
  const std::vector<float> want = prompt_logits(*scalar->model);
  float max_abs = 0.0f;
  for (float v : want) max_abs = std::max(max_abs, std::fabs(v));
  EXPECT_GT(max_abs, 0.0f);
  EXPECT_TRUE(std::isfinite(max_abs));
  for (kernels::Isa isa : kernels::kAllLevels) {
    const kernels::KernelTable* table = kernels::kernels_for(isa);
    if (table == nullptr) {
      std::printf("[ NOTE     ] %s is not available on this CPU: not compared\n", kernels::isa_name(isa).data());
      continue;
    }
    Result<LoadedModel> at_level = load_model(path, *table);
    ASSERT_TRUE(at_level.ok()) << at_level.error();
    // The q7_K matmuls give every level the scalar bits (tests/unit/kernels/matmul_kquant_test.cc); attention and
    // the other ops may round differently per level, so the logits agree to f32 rounding, not bit for bit.
    const std::vector<float> got = prompt_logits(*at_level->model);
    ASSERT_EQ(got.size(), want.size()) << kernels::isa_name(isa);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5f * max_abs) << kernels::isa_name(isa) << " logit " << i;
  }
}

TEST_F(ConvertedTypesTest, ACarriedTensorWithANonFiniteScaleIsConvertedInstead) {
  std::mt19937 rng(8);
  std::vector<uint8_t> tq = random_blocks(GgmlType::kTQ2_0, 512, rng);
  const uint16_t inf = 0x7c00;
  std::memcpy(tq.data() + 66 + 64, &inf, 2);  // row 1's scale
  format::GgufWriter w;
  w.add_tensor("t", GgmlType::kTQ2_0, {256, 2}, tq.data(), tq.size());
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto file = format::GgufFile::from_memory(bytes, "inf.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  const TensorSet set = tensor_set_from_gguf(*file);
  const TensorRef* t = set.find("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, DType::kF32) << "q8_0 cannot hold an infinity either";
  std::vector<float> exact(512);
  format::dequantize_ggml_row(GgmlType::kTQ2_0, tq.data(), exact.data(), 512);
  EXPECT_EQ(std::memcmp(t->data, exact.data(), 512 * sizeof(float)), 0);
}

TEST_F(ConvertedTypesTest, ATypePagodaCannotRunIsRefusedWithItsNameAndTheTensors) {
  for (GgmlType type : {GgmlType::kNVFP4, GgmlType::kQ1_0, GgmlType::kQ2_0}) {
    format::GgufWriter w;
    for (const auto& [key, value] : base_->metadata()) w.set(key, value);
    std::vector<uint8_t> bytes;  // borrowed by the writer until written
    for (const format::GgufTensorInfo& t : base_->tensors()) {
      if (t.name == "blk.1.ffn_up.weight") {
        bytes.assign(size_t(t.num_elements()) / format::ggml_block_size(type) * format::ggml_type_size(type), 0);
        w.add_tensor(t.name, type, t.dims, bytes.data(), bytes.size());
      } else {
        w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      }
    }
    const std::string path = (dir_ / "refused.gguf").string();
    ASSERT_TRUE(w.write(path).ok());
    Result<LoadedModel> loaded = load_model(path, kernels::best_kernels());
    ASSERT_FALSE(loaded.ok()) << format::ggml_type_name(type);
    EXPECT_THAT(loaded.error(), HasSubstr(fmt::format("tensor 'blk.1.ffn_up.weight' has type {}, which pagoda cannot "
                                                      "load yet",
                                                      format::ggml_type_name(type))));
  }
}

}  // namespace
}  // namespace pagoda
