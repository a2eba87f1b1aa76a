// Tests for SafetensorsFile, SafetensorsCheckpoint and SafetensorsWriter: files written by the writer read back
// exactly (single and sharded), and truncated files, bad header lengths, out-of-range offsets, unsupported
// dtypes and missing shards are errors naming the file and the tensor. Random truncations never crash.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "format/safetensors_reader.h"
#include "format/safetensors_writer.h"
#include "support/json_mutations.h"
#include "support/temp_dir_test.h"

namespace pagoda::format {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class SafetensorsTest : public testing_support::TempDirTest {
 protected:
  // Writes a file with a [2, 3] F32 tensor "a" holding 0..5 and a [4] BF16 tensor "b".
  void write_small(const std::string& file, const std::string& a = "a", const std::string& b = "b") {
    SafetensorsWriter w;
    w.add_tensor(a, DType::kF32, {2, 3}, [](std::span<uint8_t> dst) {
      for (int i = 0; i < 6; ++i) {
        const float v = float(i);
        std::memcpy(dst.data() + 4 * i, &v, 4);
      }
    });
    w.add_tensor(b, DType::kBF16, {4}, [](std::span<uint8_t> dst) { std::memset(dst.data(), 0x3f, dst.size()); });
    w.set_metadata("format", "pt");
    ASSERT_TRUE(w.write(path(file)).ok());
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void spit(const std::string& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }
  // A file whose header is `header_json` (length-prefixed) followed by `num_data_bytes` zero bytes.
  static std::string raw_file(const std::string& header_json, size_t num_data_bytes) {
    std::string s(8, '\0');
    const uint64_t n = header_json.size();
    for (int i = 0; i < 8; ++i) s[size_t(i)] = char(n >> (8 * i));
    return s + header_json + std::string(num_data_bytes, '\0');
  }
};

TEST_F(SafetensorsTest, WrittenFileReadsBackExactly) {
  write_small("model.safetensors");
  auto f = SafetensorsFile::open(path("model.safetensors"));
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_EQ((*f)->tensors().size(), 2u);
  const SafetensorsTensor* a = (*f)->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->num_elements(), 6);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % 8, 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<const float*>(a->data)[i], float(i));
  const SafetensorsTensor* b = (*f)->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kBF16);
  EXPECT_EQ(b->size_bytes, 8u);
  EXPECT_EQ(static_cast<const uint16_t*>(b->data)[3], 0x3f3f);
  EXPECT_EQ((*f)->find("c"), nullptr);

  auto c = SafetensorsCheckpoint::open_folder(dir_.string());
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_NE(c->find("a"), nullptr);
  EXPECT_EQ(*c->find("a")->file, path("model.safetensors"));
}

TEST_F(SafetensorsTest, ShardedFolderFollowsTheIndex) {
  write_small("model-00001-of-00002.safetensors", "x.weight", "x.norm");
  write_small("model-00002-of-00002.safetensors", "y.weight", "y.norm");
  spit(path("model.safetensors.index.json"),
       R"({"metadata": {"total_size": 64}, "weight_map": {"x.weight": "model-00001-of-00002.safetensors",
           "x.norm": "model-00001-of-00002.safetensors", "y.weight": "model-00002-of-00002.safetensors"}})");
  auto c = SafetensorsCheckpoint::open_folder(dir_.string());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->files().size(), 2u);
  ASSERT_NE(c->find("y.weight"), nullptr);
  EXPECT_THAT(*c->find("y.weight")->file, HasSubstr("model-00002-of-00002"));
  EXPECT_EQ(c->find("y.norm"), nullptr);  // in the shard, but not in the index

  // A shard the index names but the folder lacks.
  fs::remove(path("model-00002-of-00002.safetensors"));
  auto missing = SafetensorsCheckpoint::open_folder(dir_.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("model-00002-of-00002.safetensors"));
  EXPECT_THAT(missing.error(), HasSubstr("y.weight"));
  EXPECT_THAT(missing.error(), HasSubstr("is missing"));

  // A tensor the index places in a shard that does not hold it.
  write_small("model-00002-of-00002.safetensors", "z.weight", "z.norm");
  auto misplaced = SafetensorsCheckpoint::open_folder(dir_.string());
  ASSERT_FALSE(misplaced.ok());
  EXPECT_THAT(misplaced.error(), HasSubstr("tensor y.weight is not in model-00002-of-00002.safetensors"));

  spit(path("model.safetensors.index.json"), "{\"weight_map\": 3}");
  auto bad_index = SafetensorsCheckpoint::open_folder(dir_.string());
  ASSERT_FALSE(bad_index.ok());
  EXPECT_THAT(bad_index.error(), HasSubstr("model.safetensors.index.json: not a safetensors index"));
}

TEST_F(SafetensorsTest, EmptyFolderIsAClearError) {
  auto c = SafetensorsCheckpoint::open_folder(dir_.string());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error(), HasSubstr("no model.safetensors or model.safetensors.index.json"));
}

TEST_F(SafetensorsTest, BadFilesAreErrorsNamingFileAndTensor) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"abc", "truncated safetensors file (3 bytes"},
      {raw_file("{}", 0).substr(0, 8) + "{", "bad safetensors header length 2"},
      {raw_file("[1, 2]", 0), "the safetensors header is not a JSON object"},
      {raw_file("{not json", 0), "the safetensors header: invalid JSON: parse error at line 1, column 3"},
      // 2^32 x 2^32 elements wrapped to 0 in 64 bits and passed as an empty tensor (issue 23).
      {raw_file(R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0),
       "tensor 'w': shape is too large"},
      {raw_file(R"({"w": {"dtype": "F32", "shape": [4194304, 4194304, 1048576], "data_offsets": [0, 0]}})", 0),
       "tensor 'w': shape is too large"},
      {raw_file(std::string(5000, '[') + std::string(5000, ']'), 0),
       "the safetensors header: JSON nested deeper than 64 levels"},
      {raw_file(R"({"w": {"dtype": 5, "shape": [1], "data_offsets": [0, 4]}})", 4), "tensor 'w': needs \"dtype\""},
      {raw_file(R"({"w": {"dtype": "F32", "shape": {"0": 1}, "data_offsets": [0, 4]}})", 4),
       "tensor 'w': needs \"dtype\""},
      {raw_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, "4"]}})", 4),
       "tensor 'w': data_offsets must be non-negative integers"},
      {raw_file(R"({"w": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}})", 4),
       "tensor 'w': shape entries must be non-negative integers"},
      {raw_file(R"({"w": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", 8),
       "tensor 'w': dtype I64 is not supported"},
      {raw_file(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}})", 16),
       "tensor 'w': data_offsets [0, 8] hold 8 bytes but dtype F32 x shape [4] is 16 bytes"},
      {raw_file(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})", 16),
       "tensor 'w': data_offsets [8, 24] run past the end of the data (16 bytes; truncated file?)"},
      {raw_file(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})", 0),
       "tensor 'w': shape entries must be non-negative integers"},
      {raw_file(R"({"w": {"dtype": "F32", "shape": [1]}})", 4), "tensor 'w': needs \"dtype\""},
  };
  for (const Case& c : cases) {
    spit(path("bad.safetensors"), c.bytes);
    auto f = SafetensorsFile::open(path("bad.safetensors"));
    ASSERT_FALSE(f.ok()) << c.message;
    EXPECT_THAT(f.error(), HasSubstr(path("bad.safetensors") + ": ")) << c.message;
    EXPECT_THAT(f.error(), HasSubstr(c.message));
  }
  // Absurd header lengths are rejected before any read.
  std::string huge(8, '\xff');
  auto h = SafetensorsFile::from_memory({reinterpret_cast<const uint8_t*>(huge.data()), huge.size()}, "huge");
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(h.error(), HasSubstr("huge: bad safetensors header length"));
}

TEST_F(SafetensorsTest, TruncationsAndBitFlipsNeverCrash) {
  write_small("model.safetensors");
  const std::string good = slurp(path("model.safetensors"));
  std::mt19937 rng(7);
  for (size_t len = 0; len < good.size(); ++len) {
    auto f = SafetensorsFile::from_memory({reinterpret_cast<const uint8_t*>(good.data()), len}, "t");
    EXPECT_FALSE(f.ok()) << len;  // every prefix lacks some tensor bytes
  }
  for (int i = 0; i < 500; ++i) {
    std::string bytes = good;
    bytes[rng() % bytes.size()] ^= char(1 + rng() % 255);
    auto f = SafetensorsFile::from_memory({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "t");
    if (f.ok()) {
      for (const SafetensorsTensor& t : (*f)->tensors())
        EXPECT_LE(static_cast<const uint8_t*>(t.data) + t.size_bytes,
                  reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size());
    }
  }
}

// Every field of a header set to each JSON type (and each member removed): an error naming the file, or tensors
// whose bytes lie inside the buffer and agree with their dtype and shape. Each parse gets an exact-size heap copy,
// so ASan flags any read past the end.
TEST_F(SafetensorsTest, TypeConfusedHeadersFailCleanlyOrStayInBounds) {
  const nlohmann::json header = {{"__metadata__", {{"format", "pt"}}},
                                 {"a", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
                                 {"b", {{"dtype", "BF16"}, {"shape", {4}}, {"data_offsets", {24, 32}}}}};
  int num_ok = 0, num_failed = 0;
  testing_support::for_each_type_confusion<nlohmann::json>(
      header, [&](const nlohmann::json& variant, const std::string& where) {
        SCOPED_TRACE(where);
        const std::string text = variant.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        const std::string file = raw_file(text, 32);
        const std::vector<uint8_t> bytes(file.begin(), file.end());
        auto f = SafetensorsFile::from_memory(bytes, "t.safetensors");
        if (!f.ok()) {
          ++num_failed;
          EXPECT_THAT(f.error(), HasSubstr("t.safetensors: "));
          return;
        }
        ++num_ok;
        for (const SafetensorsTensor& t : (*f)->tensors()) {
          const auto* p = static_cast<const uint8_t*>(t.data);
          ASSERT_GE(p, bytes.data());
          ASSERT_LE(p + t.size_bytes, bytes.data() + bytes.size());
          EXPECT_EQ(t.size_bytes, uint64_t(t.num_elements()) * (t.dtype == DType::kF32 ? 4 : 2));
          uint64_t sum = 0;
          for (uint64_t i = 0; i < t.size_bytes; ++i) sum += p[i];
          (void)sum;
        }
      });
  EXPECT_GT(num_ok, 0);  // e.g. the metadata's value changed, or a tensor removed
  EXPECT_GT(num_failed, num_ok);
}

}  // namespace
}  // namespace pagoda::format
