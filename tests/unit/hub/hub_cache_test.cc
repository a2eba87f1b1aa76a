// Tests for the Hugging Face cache layout: folder names, refs, relative snapshot links (nested files too), listing
// with sizes and partial downloads, removal, and the refusal of names that would leave the cache.
#include "hub/hub_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/temp_dir_test.h"

namespace pagoda::hub {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

class HubCacheTest : public testing_support::TempDirTest {};

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";
const std::string kSha = std::string(64, 'a');

TEST_F(HubCacheTest, LayoutMatchesHuggingfaceHub) {
  HubCache cache(dir_.string());
  EXPECT_EQ(cache.repo_dir("org/name"), path("models--org--name"));
  EXPECT_EQ(cache.blob_path("org/name", kSha), path("models--org--name/blobs/" + kSha));
  EXPECT_EQ(cache.snapshot_dir("org/name", kCommit), path("models--org--name/snapshots/" + kCommit));
}

TEST_F(HubCacheTest, RefsAndLinks) {
  HubCache cache(dir_.string());
  auto none = cache.read_ref("o/r", "main");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(cache.write_ref("o/r", "main", kCommit).ok());
  EXPECT_EQ(cache.read_ref("o/r", "main")->value(), kCommit);

  fs::create_directories(path("models--o--r/blobs"));
  std::ofstream(cache.blob_path("o/r", kSha)) << "weights";
  ASSERT_TRUE(cache.link_snapshot_file("o/r", kCommit, "m.gguf", kSha).ok());
  ASSERT_TRUE(cache.link_snapshot_file("o/r", kCommit, "sub/dir/m2.gguf", kSha).ok());
  const fs::path link = cache.snapshot_dir("o/r", kCommit) + "/m.gguf";
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link).string(), "../../blobs/" + kSha);
  EXPECT_EQ(fs::read_symlink(cache.snapshot_dir("o/r", kCommit) + "/sub/dir/m2.gguf").string(),
            "../../../../blobs/" + kSha);
  ASSERT_TRUE(cache.link_snapshot_file("o/r", kCommit, "m.gguf", kSha).ok());  // again: replaced in place
  EXPECT_THAT(*cache.snapshot_files("o/r", kCommit), ElementsAre("m.gguf", "sub/dir/m2.gguf"));

  EXPECT_FALSE(cache.link_snapshot_file("o/r", kCommit, "../../../evil", kSha).ok());
  EXPECT_FALSE(cache.link_snapshot_file("o/r", kCommit, "/etc/passwd", kSha).ok());
  std::ofstream(path("models--o--r/refs/bad")) << "not a commit";
  EXPECT_FALSE(cache.read_ref("o/r", "bad").ok());
}

TEST_F(HubCacheTest, ListsSizesAndRemoves) {
  HubCache cache(dir_.string());
  fs::create_directories(path("models--o--r/blobs"));
  std::ofstream(cache.blob_path("o/r", kSha)) << std::string(1000, 'x');
  std::ofstream(cache.blob_path("o/r", std::string(64, 'b')) + ".incomplete") << std::string(10, 'x');
  ASSERT_TRUE(cache.link_snapshot_file("o/r", kCommit, "m.gguf", kSha).ok());
  ASSERT_TRUE(cache.write_ref("o/r", "main", kCommit).ok());
  fs::create_directories(path("models--a--b/snapshots"));
  fs::create_directories(path("datasets--x--y"));
  auto repos = cache.list();
  ASSERT_TRUE(repos.ok()) << repos.error();
  ASSERT_EQ(repos->size(), 2u);
  EXPECT_EQ((*repos)[0].repo, "a/b");
  EXPECT_EQ((*repos)[1].repo, "o/r");
  EXPECT_EQ((*repos)[1].bytes, 1000u);
  EXPECT_EQ((*repos)[1].incomplete_bytes, 10u);
  EXPECT_EQ((*repos)[1].refs.at("main"), kCommit);
  EXPECT_THAT((*repos)[1].files, ElementsAre("m.gguf"));

  ASSERT_TRUE(cache.remove("o/r").ok());
  EXPECT_FALSE(fs::exists(path("models--o--r")));
  EXPECT_FALSE(cache.remove("o/r").ok());
  EXPECT_FALSE(cache.remove("../x").ok());
}

TEST(RepoNamesTest, Checks) {
  EXPECT_TRUE(check_repo_id("TheBloke/Llama-2-7B-GGUF").ok());
  EXPECT_FALSE(check_repo_id("a").ok());
  EXPECT_FALSE(check_repo_id("a/..").ok());
  EXPECT_FALSE(check_repo_id("a/-b").ok());
  EXPECT_TRUE(check_repo_file_path("a/b.gguf").ok());
  EXPECT_FALSE(check_repo_file_path("a//b").ok());
  EXPECT_FALSE(check_repo_file_path("a/./b").ok());
  EXPECT_FALSE(check_repo_file_path("").ok());
  EXPECT_TRUE(is_blob_id(kCommit));
  EXPECT_FALSE(is_blob_id("ABCDEF0123456789abcdef0123456789abcdef01"));
}

}  // namespace
}  // namespace pagoda::hub
