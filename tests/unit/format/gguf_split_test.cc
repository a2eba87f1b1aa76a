// Tests for GGUF splits: the gguf-split file names, a set written by write_gguf_splits read back as one file
// (metadata from the first split, every tensor's bytes), and the errors of a broken set.
#include "format/gguf_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "format/gguf_names.h"
#include "format/gguf_writer.h"
#include "support/temp_dir_test.h"

namespace pagoda::format {
namespace {

using ::testing::HasSubstr;

class GgufSplitTest : public testing_support::TempDirTest {
 protected:
  // A file of `n` f32 tensors t0..t{n-1}, tensor i holding 8 floats i*8, i*8+1, ...
  std::string write_whole(int n) {
    values_.resize(static_cast<size_t>(n) * 8);
    std::iota(values_.begin(), values_.end(), 0.0f);
    GgufWriter w;
    w.set(gguf_key::kArchitecture, GgufValue::string("llama"));
    w.set("llama.block_count", GgufValue::u32(7));
    for (int i = 0; i < n; ++i)
      w.add_tensor("t" + std::to_string(i), GgmlType::kF32, {8}, values_.data() + i * 8, 8 * sizeof(float));
    const std::string p = path("whole.gguf");
    EXPECT_TRUE(w.write(p).ok());
    return p;
  }
  std::vector<float> values_;
};

TEST(GgufSplitNameTest, NamesRoundTrip) {
  EXPECT_EQ(gguf_split_path("/m/model-Q4_K_M", 2, 3), "/m/model-Q4_K_M-00002-of-00003.gguf");
  const auto name = parse_gguf_split_name("/m/model-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(name->prefix, "/m/model-Q4_K_M");
  EXPECT_EQ(name->index, 2);
  EXPECT_EQ(name->count, 3);
  EXPECT_FALSE(parse_gguf_split_name("/m/model.gguf").has_value());
  EXPECT_FALSE(parse_gguf_split_name("/m/model-00004-of-00003.gguf").has_value());
  EXPECT_FALSE(parse_gguf_split_name("/m/model-0000a-of-00003.gguf").has_value());
  EXPECT_FALSE(parse_gguf_split_name("-00001-of-00003.gguf").has_value());
}

TEST_F(GgufSplitTest, ASetReadsAsOneFile) {
  auto whole = GgufFile::open(write_whole(7));
  ASSERT_TRUE(whole.ok()) << whole.error();
  auto written = write_gguf_splits(*whole, path("m"), 3);
  ASSERT_TRUE(written.ok()) << written.error();
  ASSERT_EQ(written->size(), 3u);
  EXPECT_EQ((*written)[0], path("m-00001-of-00003.gguf"));

  size_t tensors_in_parts = 0;
  auto first = GgufFile::open((*written)[0]);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(first->file_count(), 3u);
  EXPECT_EQ(first->tensors().size(), 7u);
  EXPECT_EQ(first->get_u32("llama.block_count")->value(), 7u);
  EXPECT_EQ(first->get_u32(gguf_key::kSplitCount)->value(), 3u);
  for (int i = 0; i < 7; ++i) {
    const GgufTensorInfo* t = first->find_tensor("t" + std::to_string(i));
    ASSERT_NE(t, nullptr) << i;
    EXPECT_EQ(std::memcmp(t->data, values_.data() + i * 8, 8 * sizeof(float)), 0) << i;
    ++tensors_in_parts;
  }
  EXPECT_EQ(tensors_in_parts, 7u);
}

TEST_F(GgufSplitTest, EachSplitHoldsItsShare) {
  auto whole = GgufFile::open(write_whole(6));
  ASSERT_TRUE(whole.ok()) << whole.error();
  auto written = write_gguf_splits(*whole, path("m"), 3);
  ASSERT_TRUE(written.ok()) << written.error();
  // The first split carries every key; the others the split keys (and no architecture).
  auto first_bytes = MappedFile::open((*written)[0]);
  ASSERT_TRUE(first_bytes.ok());
  auto first_alone = GgufFile::from_memory((*first_bytes)->bytes(), "first");
  ASSERT_TRUE(first_alone.ok()) << first_alone.error();
  EXPECT_EQ(first_alone->tensors().size(), 2u);
  EXPECT_NE(first_alone->find(gguf_key::kArchitecture), nullptr);
  auto last_bytes = MappedFile::open((*written)[2]);
  ASSERT_TRUE(last_bytes.ok());
  auto last_alone = GgufFile::from_memory((*last_bytes)->bytes(), "last");
  ASSERT_TRUE(last_alone.ok()) << last_alone.error();
  EXPECT_EQ(last_alone->tensors().size(), 2u);
  EXPECT_EQ(last_alone->find(gguf_key::kArchitecture), nullptr);
  EXPECT_EQ(last_alone->get_u32(gguf_key::kSplitNo)->value(), 2u);
  EXPECT_EQ(last_alone->get_i64(gguf_key::kSplitTensorsCount)->value(), 6);
}

TEST_F(GgufSplitTest, LaterSplitsHoldOnlySplitKeysAndAreRefusedAlone) {
  auto whole = GgufFile::open(write_whole(4));
  ASSERT_TRUE(whole.ok()) << whole.error();
  auto written = write_gguf_splits(*whole, path("m"), 2);
  ASSERT_TRUE(written.ok()) << written.error();
  auto second = GgufFile::open((*written)[1]);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error(), HasSubstr("split 2 of 2; open the first split (" + path("m-00001-of-00002.gguf")));
}

TEST_F(GgufSplitTest, AMissingOrForeignSplitIsAnError) {
  auto whole = GgufFile::open(write_whole(4));
  ASSERT_TRUE(whole.ok()) << whole.error();
  auto written = write_gguf_splits(*whole, path("m"), 2);
  ASSERT_TRUE(written.ok()) << written.error();
  std::filesystem::remove((*written)[1]);
  auto missing = GgufFile::open((*written)[0]);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("m-00002-of-00002.gguf"));

  // A first split renamed away from the pattern cannot find its siblings.
  auto again = write_gguf_splits(*whole, path("n"), 2);
  ASSERT_TRUE(again.ok()) << again.error();
  std::filesystem::rename((*again)[0], path("renamed.gguf"));
  auto renamed = GgufFile::open(path("renamed.gguf"));
  ASSERT_FALSE(renamed.ok());
  EXPECT_THAT(renamed.error(), HasSubstr("not named PREFIX-00001-of-00002.gguf"));
}

TEST_F(GgufSplitTest, BadCountsAreErrors) {
  auto whole = GgufFile::open(write_whole(2));
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_FALSE(write_gguf_splits(*whole, path("m"), 1).ok());
  auto too_many = write_gguf_splits(*whole, path("m"), 3);
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(too_many.error(), HasSubstr("fewer than the 3 splits"));
}

}  // namespace
}  // namespace pagoda::format
