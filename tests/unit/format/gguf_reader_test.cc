// Tests for GgufFile on hand-crafted bytes: version 2, every header/metadata/tensor-info error message, the
// bounds that keep corrupted counts from allocating, and the typed metadata getters.
#include "format/gguf_reader.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "byte_builder.h"
#include "format/gguf_writer.h"

namespace pagoda::format {
namespace {

using testing::ByteBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr uint32_t kTypeU32 = 4;
constexpr uint32_t kTypeString = 8;
constexpr uint32_t kTypeArray = 9;
constexpr uint32_t kTypeU64 = 10;

// Fields of a one-tensor file, each overridable by a test.
struct TinyFile {
  uint32_t version = 3;
  std::optional<uint32_t> alignment;  // written as general.alignment when set
  std::string name = "blk.0.attn_q.weight";
  uint32_t type_id = 0;  // f32
  std::vector<uint64_t> dims = {4, 2};
  uint64_t offset = 0;
  size_t num_data_bytes = 32;  // 8 f32

  std::vector<uint8_t> bytes() const {
    ByteBuilder b;
    b.header(version, 1, alignment ? 2 : 1);
    b.str("general.architecture").u32(kTypeString).str("llama");
    if (alignment) b.str("general.alignment").u32(kTypeU32).u32(*alignment);
    b.str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) b.u64(d);
    b.u32(type_id).u64(offset);
    b.pad_to(alignment && *alignment != 0 && (*alignment & (*alignment - 1)) == 0 ? *alignment : 32);
    b.zeros(num_data_bytes);
    return b.bytes();
  }
};

std::string parse_error(const std::vector<uint8_t>& bytes) {
  auto file = GgufFile::from_memory(bytes, "model.gguf");
  if (file.ok()) return "(parsed fine)";
  EXPECT_THAT(file.error(), StartsWith("model.gguf: "));
  EXPECT_EQ(file.error().find('\n'), std::string::npos) << "errors are one line";
  return file.error();
}

TEST(GgufReaderTest, TinyFileParses) {
  const std::vector<uint8_t> bytes = TinyFile{}.bytes();
  auto file = GgufFile::from_memory(bytes, "model.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->name(), "model.gguf");
  ASSERT_EQ(file->tensors().size(), 1u);
  EXPECT_EQ(file->tensors()[0].size_bytes, 32u);
  EXPECT_EQ(file->tensors()[0].dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(file->tensors()[0].data, bytes.data() + bytes.size() - 32);
}

TEST(GgufReaderTest, AcceptsVersion2) {
  ByteBuilder b;
  b.header(2, 1, 2);
  b.str("general.name").u32(kTypeString).str("v2");
  b.str("tokenizer.ggml.scores").u32(kTypeArray).u32(6).u64(2).f32(0.5f).f32(-1.0f);
  b.str("w").u32(2).u64(3).u64(1).u32(1).u64(0);  // f16 [3, 1]
  b.pad_to(32);
  b.u8(1).u8(2).u8(3).u8(4).u8(5).u8(6);
  auto file = GgufFile::from_memory(b.bytes(), "v2.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->version(), 2u);
  EXPECT_EQ(file->get_string("general.name")->value(), "v2");
  EXPECT_THAT(file->get_f32_array("tokenizer.ggml.scores")->value(), ElementsAre(0.5f, -1.0f));
  const GgufTensorInfo* w = file->find_tensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->type, GgmlType::kF16);
  EXPECT_EQ(w->size_bytes, 6u);
  EXPECT_EQ(static_cast<const uint8_t*>(w->data)[5], 6);
}

TEST(GgufReaderTest, NoTensorsAndNoPadding) {
  ByteBuilder b;
  b.header(3, 0, 1).str("k").u32(kTypeU32).u32(7);  // ends right after the metadata
  auto file = GgufFile::from_memory(b.bytes(), "m.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->get_u32("k")->value(), 7u);
}

TEST(GgufReaderTest, TooSmall) {
  EXPECT_THAT(parse_error({}), HasSubstr("too small to be a GGUF file (0 bytes)"));
  EXPECT_THAT(parse_error({'G', 'G'}), HasSubstr("too small"));
  EXPECT_THAT(parse_error({'G', 'G', 'U', 'F', 3, 0}), HasSubstr("truncated"));
}

TEST(GgufReaderTest, BadMagic) {
  std::vector<uint8_t> bytes = TinyFile{}.bytes();
  bytes[0] = 'g';
  EXPECT_THAT(parse_error(bytes), HasSubstr("model.gguf: not a GGUF file (bad magic"));
}

TEST(GgufReaderTest, Version1) {
  TinyFile f;
  f.version = 1;
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("model.gguf: GGUF version 1 is not supported"));
}

TEST(GgufReaderTest, OtherVersions) {
  TinyFile f;
  f.version = 4;
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("unsupported GGUF version 4 (pagoda reads versions 2 and 3)"));
  f.version = 0;
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("unsupported GGUF version 0"));
}

TEST(GgufReaderTest, BigEndian) {
  TinyFile f;
  f.version = 0x03000000;  // 3 written big-endian
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("big-endian GGUF file"));
  f.version = 0x02000000;
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("big-endian GGUF file (version 2 byte-swapped)"));
}

TEST(GgufReaderTest, UnsupportedTensorType) {
  // Written by hand (the writer refuses the type too), so the file is otherwise valid: only the type is refused.
  TinyFile f;
  f.type_id = uint32_t(GgmlType::kNVFP4);
  f.dims = {256, 1};
  f.num_data_bytes = 144;
  EXPECT_THAT(
      parse_error(f.bytes()),
      HasSubstr("model.gguf: tensor 'blk.0.attn_q.weight' has type nvfp4, which pagoda cannot load yet "
                "(supported: f32, f16, bf16, q8_0, q4_0, q4_1, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, "
                "mxfp4, int8, awq_int4_g32|g64|g128; converted at load: q8_K; re-encoded losslessly for q2_K's, "
                "q6_K's, q7_K's and q8_0's kernels: tq1_0, tq2_0, iq3_xxs, iq3_s, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, "
                "q5_0)"));
}

TEST(GgufReaderTest, KQuantTensorsAreMapped) {
  const std::vector<uint8_t> q4k(144 * 2, 7), q6k(210, 9);
  GgufWriter writer;
  writer.add_tensor("a", GgmlType::kQ4_K, {512, 1}, q4k.data(), q4k.size());
  writer.add_tensor("b", GgmlType::kQ6_K, {256}, q6k.data(), q6k.size());
  const std::vector<uint8_t> bytes = writer.to_bytes();
  auto file = GgufFile::from_memory(bytes, "model.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  ASSERT_EQ(file->tensors().size(), 2u);
  EXPECT_EQ(file->tensors()[0].type, GgmlType::kQ4_K);
  EXPECT_EQ(file->tensors()[0].size_bytes, 288u);
  EXPECT_EQ(static_cast<const uint8_t*>(file->tensors()[0].data)[287], 7);
  EXPECT_EQ(file->tensors()[1].size_bytes, 210u);
}

TEST(GgufReaderTest, UnknownTensorType) {
  TinyFile f;
  f.type_id = 99;
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("tensor 'blk.0.attn_q.weight' has unknown ggml type id 99"));
  f.type_id = 4;  // q4_2, removed from ggml long ago
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("unknown ggml type id 4"));
}

TEST(GgufReaderTest, TensorPastEndOfFile) {
  TinyFile f;
  f.num_data_bytes = 31;
  EXPECT_THAT(parse_error(f.bytes()),
              HasSubstr("tensor 'blk.0.attn_q.weight' (shape [4, 2], 32 bytes at data offset 0) ends past the end of "
                        "the file"));
  f.num_data_bytes = 32;
  f.offset = 32;
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("ends past the end of the file"));
  f.offset = std::numeric_limits<uint64_t>::max() - 31;  // aligned, and data_start + offset overflows
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("ends past the end of the file"));
}

TEST(GgufReaderTest, MisalignedOffset) {
  TinyFile f;
  f.offset = 8;
  f.num_data_bytes = 64;
  EXPECT_THAT(parse_error(f.bytes()),
              HasSubstr("tensor 'blk.0.attn_q.weight' has data offset 8, which is not a multiple of the alignment 32"));
  f.alignment = 8;  // the same offset is fine with a smaller alignment
  EXPECT_EQ(parse_error(f.bytes()), "(parsed fine)");
}

TEST(GgufReaderTest, BadAlignment) {
  TinyFile f;
  f.alignment = 0;
  EXPECT_THAT(parse_error(f.bytes()),
              HasSubstr("general.alignment is 0; it must be a power of two and a multiple of 8"));
  f.alignment = 48;
  EXPECT_THAT(parse_error(f.bytes()),
              HasSubstr("general.alignment is 48; it must be a power of two and a multiple of 8"));
  // Powers of two below 8 would put f32/f16 tensor data (and the kernels' loads) at misaligned addresses.
  for (uint32_t small : {1u, 2u, 4u}) {
    f.alignment = small;
    EXPECT_THAT(parse_error(f.bytes()), HasSubstr(fmt::format("general.alignment is {}; it must be a power of two and "
                                                              "a multiple of 8",
                                                              small)));
  }
  f.alignment = 8;
  EXPECT_EQ(parse_error(f.bytes()), "(parsed fine)");

  ByteBuilder b;
  b.header(3, 0, 1).str("general.alignment").u32(kTypeU64).u64(32);
  EXPECT_THAT(parse_error(b.bytes()), HasSubstr("general.alignment has type u64, expected u32"));
}

TEST(GgufReaderTest, DuplicateKey) {
  ByteBuilder b;
  b.header(3, 0, 2).str("general.name").u32(kTypeU32).u32(1).str("general.name").u32(kTypeU32).u32(2);
  EXPECT_THAT(parse_error(b.bytes()), HasSubstr("model.gguf: duplicate metadata key 'general.name'"));
}

TEST(GgufReaderTest, DuplicateTensorName) {
  ByteBuilder b;
  b.header(3, 2, 0);
  b.str("t").u32(1).u64(8).u32(0).u64(0);
  b.str("t").u32(1).u64(8).u32(0).u64(32);
  b.pad_to(32).zeros(64);
  EXPECT_THAT(parse_error(b.bytes()), HasSubstr("duplicate tensor name 't'"));
}

TEST(GgufReaderTest, BadDims) {
  TinyFile f;
  f.dims = {};
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("has 0 dimensions; GGUF allows 1 to 4"));
  f.dims = {1, 1, 1, 1, 8};
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("has 5 dimensions; GGUF allows 1 to 4"));
  f.dims = {4, 0};
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("has dimension 1 = 0; each must be at least 1"));
  f.dims = {1u << 31, 1u << 31, 1u << 31};
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("element count overflows"));
  f.dims = {uint64_t{1} << 62, 1};  // 2^62 f32 elements: element count fits, bytes do not
  EXPECT_THAT(parse_error(f.bytes()), HasSubstr("byte size that overflows"));
  f.dims = {1, 1, 1, 8};
  EXPECT_EQ(parse_error(f.bytes()), "(parsed fine)");
}

TEST(GgufReaderTest, HugeCountsAreRejectedBeforeAllocating) {
  ByteBuilder arr;
  arr.header(3, 0, 1).str("a").u32(kTypeArray).u32(kTypeU32).u64(uint64_t{1} << 60);
  EXPECT_THAT(parse_error(arr.bytes()),
              HasSubstr("metadata key 'a': array of 1152921504606846976 u32 elements at offset"));

  ByteBuilder str;
  str.header(3, 0, 1).str("s").u32(kTypeString).u64(uint64_t{1} << 60);
  EXPECT_THAT(parse_error(str.bytes()),
              HasSubstr("string of 1152921504606846976 bytes at offset 45 runs past the end"));

  ByteBuilder key;
  key.header(3, 0, 1).u64(std::numeric_limits<uint64_t>::max()).zeros(16);
  EXPECT_THAT(parse_error(key.bytes()), HasSubstr("metadata entry 0 of 1: key of"));

  ByteBuilder kv;
  kv.header(3, 0, uint64_t{1} << 60);
  EXPECT_THAT(parse_error(kv.bytes()), HasSubstr("metadata count 1152921504606846976 cannot fit"));

  ByteBuilder tensors;
  tensors.header(3, uint64_t{1} << 60, 0);
  EXPECT_THAT(parse_error(tensors.bytes()), HasSubstr("tensor count 1152921504606846976 cannot fit"));

  // An array of empty arrays: each element costs 12 file bytes, so a count just above remaining / 12 fails.
  ByteBuilder nested;
  nested.header(3, 0, 1).str("n").u32(kTypeArray).u32(kTypeArray).u64(2);
  nested.u32(kTypeU32).u64(0).u32(kTypeU32);
  EXPECT_THAT(parse_error(nested.bytes()), HasSubstr("array of 2 array elements"));
}

TEST(GgufReaderTest, NestingDepthIsBounded) {
  ByteBuilder b;
  b.header(3, 0, 1).str("deep").u32(kTypeArray);
  for (int i = 0; i < 100; ++i) b.u32(kTypeArray).u64(1);
  b.u32(kTypeU32).u64(0);
  EXPECT_THAT(parse_error(b.bytes()), HasSubstr("metadata key 'deep': arrays nested deeper than 16 levels"));

  ByteBuilder ok;
  ok.header(3, 0, 1).str("deep").u32(kTypeArray);
  for (int i = 0; i < 15; ++i) ok.u32(kTypeArray).u64(1);
  ok.u32(kTypeU32).u64(1).u32(42);
  auto file = GgufFile::from_memory(ok.bytes(), "ok.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  const GgufValue* v = file->find("deep");
  for (int i = 0; i < 15; ++i) v = &v->array.at(0);
  EXPECT_EQ(v->array.at(0).u64, 42u);
}

TEST(GgufReaderTest, BadValues) {
  ByteBuilder type;
  type.header(3, 0, 1).str("k").u32(13).u32(0);
  EXPECT_THAT(parse_error(type.bytes()), HasSubstr("metadata key 'k' has unknown value type 13"));

  ByteBuilder element;
  element.header(3, 0, 1).str("k").u32(kTypeArray).u32(77).u64(0);
  EXPECT_THAT(parse_error(element.bytes()), HasSubstr("metadata key 'k': array has unknown element type 77"));

  ByteBuilder boolean;
  boolean.header(3, 0, 1).str("k").u32(7).u8(2);
  EXPECT_THAT(parse_error(boolean.bytes()), HasSubstr("metadata key 'k': bool value 2 at offset 37 is not 0 or 1"));

  ByteBuilder truncated;
  truncated.header(3, 0, 1).str("k").u32(kTypeU64).u32(0);
  EXPECT_THAT(parse_error(truncated.bytes()),
              HasSubstr("truncated file: metadata key 'k': u64 needs 8 bytes at offset 37, but the file is 41 bytes"));
}

TEST(GgufReaderTest, NamesInErrorsAreEscaped) {
  ByteBuilder b;
  b.header(3, 0, 2).str("a\nb").u32(kTypeU32).u32(1).str("a\nb").u32(kTypeU32).u32(1);
  EXPECT_THAT(parse_error(b.bytes()), HasSubstr("duplicate metadata key 'a\\x0ab'"));
}

TEST(GgufReaderTest, TypedGetters) {
  GgufWriter writer;
  writer.set("s", GgufValue::string("str"));
  writer.set("u8", GgufValue::u8(200));
  writer.set("i8", GgufValue::i8(-3));
  writer.set("u64_big", GgufValue::u64v(uint64_t{1} << 40));
  writer.set("u64_huge", GgufValue::u64v(std::numeric_limits<uint64_t>::max()));
  writer.set("f32", GgufValue::f32(1.5f));
  writer.set("f64", GgufValue::f64v(0.25));
  writer.set("b", GgufValue::boolean(true));
  writer.set("sa", GgufValue::string_array({"a", "b"}));
  writer.set("fa", GgufValue::f32_array({1.0f, 2.0f}));
  writer.set("ia", GgufValue::i32_array({-1, 5}));
  writer.set("u8a", GgufValue::array_of(GgufValueType::kUint8, {GgufValue::u8(9)}));
  writer.set("u32a_big", GgufValue::array_of(GgufValueType::kUint32, {GgufValue::u32(4000000000u)}));
  const std::vector<uint8_t> bytes = writer.to_bytes();
  auto file = GgufFile::from_memory(bytes, "m.gguf");
  ASSERT_TRUE(file.ok()) << file.error();

  EXPECT_EQ(file->get_string("s")->value(), "str");
  EXPECT_FALSE(file->get_string("missing")->has_value());
  EXPECT_THAT(file->get_string("u8").error(), HasSubstr("m.gguf: metadata key 'u8' has type u8, expected string"));
  EXPECT_EQ(file->get_u32("u8")->value(), 200u);
  EXPECT_EQ(file->get_i64("i8")->value(), -3);
  EXPECT_EQ(file->get_i64("u64_big")->value(), int64_t{1} << 40);
  EXPECT_THAT(file->get_u32("i8").error(), HasSubstr("metadata key 'i8' = -3 does not fit in u32"));
  EXPECT_THAT(file->get_u32("u64_big").error(), HasSubstr("= 1099511627776 does not fit in u32"));
  EXPECT_THAT(file->get_i64("u64_huge").error(), HasSubstr("= 18446744073709551615 does not fit in i64"));
  EXPECT_THAT(file->get_u32("s").error(), HasSubstr("has type string, expected u32"));
  EXPECT_EQ(file->get_f32("f32")->value(), 1.5f);
  EXPECT_EQ(file->get_f32("f64")->value(), 0.25f);
  EXPECT_THAT(file->get_f32("u8").error(), HasSubstr("expected f32"));
  EXPECT_EQ(file->get_bool("b")->value(), true);
  EXPECT_THAT(file->get_bool("u8").error(), HasSubstr("expected bool"));
  EXPECT_THAT(file->get_string_array("sa")->value(), ElementsAre("a", "b"));
  EXPECT_THAT(file->get_string_array("fa").error(), HasSubstr("has type array of f32, expected array of string"));
  EXPECT_THAT(file->get_f32_array("fa")->value(), ElementsAre(1.0f, 2.0f));
  EXPECT_THAT(file->get_f32_array("ia").error(), HasSubstr("expected array of f32"));
  EXPECT_THAT(file->get_i32_array("ia")->value(), ElementsAre(-1, 5));
  EXPECT_THAT(file->get_i32_array("u8a")->value(), ElementsAre(9));
  EXPECT_THAT(file->get_i32_array("u32a_big").error(), HasSubstr("element 0 = 4000000000 does not fit in i32"));
  EXPECT_THAT(file->get_i32_array("sa").error(), HasSubstr("expected array of i32"));
  EXPECT_FALSE(file->get_i32_array("missing")->has_value());
}

}  // namespace
}  // namespace pagoda::format
