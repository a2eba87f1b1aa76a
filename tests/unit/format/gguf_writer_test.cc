// Tests for GgufWriter: the exact byte layout llama.cpp expects, and writer -> reader round trips of every
// metadata value type (nested arrays included) and of f32/f16/bf16 tensors with odd shapes.
#include "format/gguf_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "byte_builder.h"
#include "format/gguf_reader.h"
#include "support/temp_dir_test.h"

namespace pagoda::format {
namespace {

class GgufWriterTest : public testing_support::TempDirTest {};

using testing::ByteBuilder;
using ::testing::ElementsAre;

std::vector<uint8_t> iota_bytes(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST_F(GgufWriterTest, ExactStandardLayout) {
  const std::vector<uint8_t> data = iota_bytes(12, 1);    // f32 [3]
  const std::vector<uint8_t> data2 = iota_bytes(4, 100);  // f16 [2]
  GgufWriter writer;
  writer.set("general.architecture", GgufValue::string("llama"));
  writer.set("llama.block_count", GgufValue::u32(2));
  writer.add_tensor("a", GgmlType::kF32, {3}, data.data(), data.size());
  writer.add_tensor("b", GgmlType::kF16, {2}, data2.data(), data2.size());

  ByteBuilder expected;
  expected.header(3, 2, 2);
  expected.str("general.architecture").u32(8).str("llama");
  expected.str("llama.block_count").u32(4).u32(2);
  expected.str("a").u32(1).u64(3).u32(0).u64(0);
  expected.str("b").u32(1).u64(2).u32(1).u64(32);  // previous tensor padded to 32
  expected.pad_to(32);
  expected.raw(std::string_view(reinterpret_cast<const char*>(data.data()), data.size())).pad_to(32);
  expected.raw(std::string_view(reinterpret_cast<const char*>(data2.data()), data2.size())).pad_to(32);
  EXPECT_EQ(writer.to_bytes(), expected.bytes());
}

TEST_F(GgufWriterTest, GeneratedTensorsWriteTheSameBytesAsBorrowedOnes) {
  const std::vector<uint8_t> a = iota_bytes(12, 1), b = iota_bytes(40, 7);
  GgufWriter borrowed, generated;
  borrowed.add_tensor("a", GgmlType::kF32, {3}, a.data(), a.size());
  borrowed.add_tensor("b", GgmlType::kF16, {4, 5}, b.data(), b.size());
  int32_t num_fills = 0;
  auto fill_from = [&num_fills](const std::vector<uint8_t>& src) {
    return [&num_fills, &src](std::span<uint8_t> dst) {
      ASSERT_EQ(dst.size(), src.size());
      std::copy(src.begin(), src.end(), dst.begin());
      ++num_fills;
    };
  };
  generated.add_tensor_generated("a", GgmlType::kF32, {3}, a.size(), fill_from(a));
  generated.add_tensor_generated("b", GgmlType::kF16, {4, 5}, b.size(), fill_from(b));
  EXPECT_EQ(generated.to_bytes(), borrowed.to_bytes());
  EXPECT_EQ(num_fills, 2);

  const std::string out = path("generated.gguf");
  ASSERT_TRUE(generated.write(out).ok());
  auto file = GgufFile::open(out);
  ASSERT_TRUE(file.ok()) << file.error();
  const GgufTensorInfo* t = file->find_tensor("b");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::memcmp(t->data, b.data(), b.size()), 0);
  EXPECT_EQ(num_fills, 4);
}

TEST_F(GgufWriterTest, SetReplacesInPlace) {
  GgufWriter writer;
  writer.set("a", GgufValue::u32(1));
  writer.set("b", GgufValue::u32(2));
  writer.set("a", GgufValue::string("x"));
  const std::vector<uint8_t> bytes = writer.to_bytes();
  auto file = GgufFile::from_memory(bytes, "mem.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  ASSERT_EQ(file->metadata().size(), 2u);
  EXPECT_EQ(file->metadata()[0].first, "a");
  EXPECT_EQ(file->metadata()[0].second.str, "x");
  EXPECT_EQ(file->metadata()[1].first, "b");
}

TEST_F(GgufWriterTest, RoundTripsEveryValueType) {
  std::vector<std::pair<std::string, GgufValue>> values = {
      {"t.u8", GgufValue::u8(255)},
      {"t.i8", GgufValue::i8(-128)},
      {"t.u16", GgufValue::u16(65535)},
      {"t.i16", GgufValue::i16(-32768)},
      {"t.u32", GgufValue::u32(4000000000u)},
      {"t.i32", GgufValue::i32(-2000000000)},
      {"t.f32", GgufValue::f32(3.25f)},
      {"t.bool_true", GgufValue::boolean(true)},
      {"t.bool_false", GgufValue::boolean(false)},
      {"t.string", GgufValue::string("hello \xe4\xb8\x96\xe7\x95\x8c")},
      {"t.empty_string", GgufValue::string("")},
      {"t.u64", GgufValue::u64v(std::numeric_limits<uint64_t>::max())},
      {"t.i64", GgufValue::i64v(std::numeric_limits<int64_t>::min())},
      {"t.f64", GgufValue::f64v(-1.0e300)},
      {"t.string_array", GgufValue::string_array({"<s>", "", "</s>"})},
      {"t.f32_array", GgufValue::f32_array({0.5f, -1.5f, 1e-20f})},
      {"t.i32_array", GgufValue::i32_array({1, -2, 3})},
      {"t.empty_array", GgufValue::array_of(GgufValueType::kUint64, {})},
      {"t.u8_array", GgufValue::array_of(GgufValueType::kUint8, {GgufValue::u8(1), GgufValue::u8(2)})},
      {"t.bool_array",
       GgufValue::array_of(GgufValueType::kBool, {GgufValue::boolean(true), GgufValue::boolean(false)})},
      {"t.f64_array", GgufValue::array_of(GgufValueType::kFloat64, {GgufValue::f64v(0.125)})},
      {"t.nested",
       GgufValue::array_of(GgufValueType::kArray,
                           {GgufValue::i32_array({1, 2}), GgufValue::string_array({"x"}),
                            GgufValue::array_of(GgufValueType::kArray,
                                                {GgufValue::array_of(GgufValueType::kInt16, {GgufValue::i16(-5)}),
                                                 GgufValue::array_of(GgufValueType::kArray, {})})})},
  };
  GgufWriter writer;
  for (const auto& [key, value] : values) writer.set(key, value);
  const std::vector<uint8_t> bytes = writer.to_bytes();
  auto file = GgufFile::from_memory(bytes, "mem.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 32u);
  ASSERT_EQ(file->metadata().size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(file->metadata()[i].first, values[i].first);
    EXPECT_EQ(file->metadata()[i].second, values[i].second) << values[i].first;
    EXPECT_EQ(file->find(values[i].first), &file->metadata()[i].second);
  }
  EXPECT_EQ(file->find("missing"), nullptr);
  EXPECT_TRUE(file->tensors().empty());
}

TEST_F(GgufWriterTest, RoundTripsTensorsWithOddShapes) {
  struct Case {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    size_t element_bytes;
  };
  const std::vector<Case> cases = {
      {"f32.odd", GgmlType::kF32, {3, 5, 7}, 4},     {"f16.vector", GgmlType::kF16, {7}, 2},
      {"bf16.4d", GgmlType::kBF16, {1, 3, 1, 5}, 2}, {"f32.scalar", GgmlType::kF32, {1}, 4},
      {"f16.wide", GgmlType::kF16, {33, 2}, 2},
  };
  std::vector<std::vector<uint8_t>> data;
  GgufWriter writer;
  writer.set("general.name", GgufValue::string("odd"));
  for (size_t i = 0; i < cases.size(); ++i) {
    int64_t num_elements = 1;
    for (int64_t d : cases[i].dims) num_elements *= d;
    data.push_back(
        iota_bytes(static_cast<size_t>(num_elements) * cases[i].element_bytes, static_cast<uint8_t>(i * 40)));
    writer.add_tensor(cases[i].name, cases[i].type, cases[i].dims, data[i].data(), data[i].size());
  }
  const std::vector<uint8_t> bytes = writer.to_bytes();
  EXPECT_EQ(bytes.size() % 32, 0u);
  auto file = GgufFile::from_memory(bytes, "mem.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  ASSERT_EQ(file->tensors().size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const GgufTensorInfo& info = file->tensors()[i];
    EXPECT_EQ(info.name, cases[i].name);
    EXPECT_EQ(info.type, cases[i].type);
    EXPECT_EQ(info.dims, cases[i].dims);
    EXPECT_EQ(info.size_bytes, data[i].size());
    EXPECT_EQ(static_cast<size_t>(info.num_elements()) * cases[i].element_bytes, data[i].size());
    EXPECT_EQ(info.offset % 32, 0u);
    const auto* p = static_cast<const uint8_t*>(info.data);
    EXPECT_EQ(std::vector<uint8_t>(p, p + info.size_bytes), data[i]) << info.name;
    EXPECT_EQ(file->find_tensor(cases[i].name), &info);
  }
  EXPECT_EQ(file->find_tensor("nope"), nullptr);
}

TEST_F(GgufWriterTest, HonoursCustomAlignment) {
  for (uint32_t alignment : {8u, 64u, 4096u}) {
    const std::vector<uint8_t> a = iota_bytes(6, 0);
    const std::vector<uint8_t> b = iota_bytes(20, 9);
    GgufWriter writer;
    writer.set("general.alignment", GgufValue::u32(alignment));
    writer.add_tensor("a", GgmlType::kBF16, {3}, a.data(), a.size());
    writer.add_tensor("b", GgmlType::kF32, {5}, b.data(), b.size());
    const std::vector<uint8_t> bytes = writer.to_bytes();
    auto file = GgufFile::from_memory(bytes, "mem.gguf");
    ASSERT_TRUE(file.ok()) << file.error();
    EXPECT_EQ(file->alignment(), alignment);
    const auto* base = bytes.data();
    for (const GgufTensorInfo& info : file->tensors()) {
      EXPECT_EQ(info.offset % alignment, 0u);
      EXPECT_EQ(static_cast<size_t>(static_cast<const uint8_t*>(info.data) - base) % alignment, 0u);
    }
    const auto* pb = static_cast<const uint8_t*>(file->find_tensor("b")->data);
    EXPECT_EQ(std::vector<uint8_t>(pb, pb + 20), b);
    EXPECT_EQ(file->tensors()[1].offset, (6 + alignment - 1) / alignment * alignment);
  }
}

TEST_F(GgufWriterTest, WritesQuantizedTypesForOtherReaders) {
  // The writer knows ggml block layouts, so it can write a q8_0 tensor (which this reader refuses).
  const std::vector<uint8_t> q(34 * 2, 0);
  GgufWriter writer;
  writer.add_tensor("q", GgmlType::kQ8_0, {64}, q.data(), q.size());
  const std::vector<uint8_t> bytes = writer.to_bytes();
  EXPECT_EQ(bytes.size() % 32, 0u);
}

TEST(GgufWriterDeathTest, ContractViolationsAbort) {
  const std::vector<uint8_t> data(16, 0);
  EXPECT_DEATH(
      {
        GgufWriter writer;
        writer.add_tensor("t", GgmlType::kF32, {5}, data.data(), data.size());
      },
      "16 bytes given, its type and shape need 20");
  EXPECT_DEATH(
      {
        GgufWriter writer;
        writer.set("general.alignment", GgufValue::u32(48));
      },
      "power of two");
  EXPECT_DEATH(
      {
        GgufWriter writer;
        writer.set("x", GgufValue::array_of(GgufValueType::kInt32, {GgufValue::u32(1)}));
      },
      "array of i32 holds a u32 element");
}

}  // namespace
}  // namespace pagoda::format
