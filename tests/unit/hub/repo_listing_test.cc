// Tests for the Hub listing's JSON (/api/models/{repo}/revision/{rev}?blobs=true, in the Hub's shape): files,
// sizes, blob ids, LFS sha256s, and the refusal of malformed or hostile entries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hub/hub_client.h"

namespace pagoda::hub {
namespace {

using ::testing::HasSubstr;

const char* kListing = R"({
  "_id": "66a0", "id": "org/m-GGUF", "modelId": "org/m-GGUF", "author": "org",
  "sha": "0123456789abcdef0123456789abcdef01234567", "private": false, "gated": false, "disabled": false,
  "tags": ["gguf"], "lastModified": "2024-07-24T12:00:00.000Z",
  "siblings": [
    {"rfilename": ".gitattributes", "blobId": "a6344aac8c09253b3b630fb776ae94478aa0275b", "size": 1519},
    {"rfilename": "m-Q4_K_M.gguf", "blobId": "b6344aac8c09253b3b630fb776ae94478aa0275b", "size": 4920000,
     "lfs": {"sha256": "c2aeac54ba0b1b4bcf1c32eb5e3b0b59a9bc3e88ff8b2c6d1c5e41a0f2b3d4e5", "size": 4920000,
             "pointerSize": 135}}
  ]})";

TEST(RepoListingTest, ReadsTheHubsShape) {
  auto l = parse_repo_listing(kListing, "org/m-GGUF");
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->commit, "0123456789abcdef0123456789abcdef01234567");
  ASSERT_EQ(l->files.size(), 2u);
  EXPECT_EQ(l->files[0].path, ".gitattributes");
  EXPECT_EQ(l->files[0].id(), "a6344aac8c09253b3b630fb776ae94478aa0275b");
  EXPECT_EQ(l->files[1].size, 4920000u);
  EXPECT_EQ(l->files[1].id(), "c2aeac54ba0b1b4bcf1c32eb5e3b0b59a9bc3e88ff8b2c6d1c5e41a0f2b3d4e5");
}

TEST(RepoListingTest, RefusesMalformedListings) {
  EXPECT_FALSE(parse_repo_listing("[]", "o/r").ok());
  EXPECT_FALSE(parse_repo_listing("not json", "o/r").ok());
  EXPECT_FALSE(parse_repo_listing(R"({"sha": "x", "siblings": []})", "o/r").ok());
  const std::string sha = "0123456789abcdef0123456789abcdef01234567";
  // Without ?blobs=true the Hub omits sizes and blob ids.
  auto bare = parse_repo_listing(R"({"sha": ")" + sha + R"(", "siblings": [{"rfilename": "a.gguf"}]})", "o/r");
  ASSERT_FALSE(bare.ok());
  EXPECT_THAT(bare.error(), HasSubstr("?blobs=true"));
  auto evil = parse_repo_listing(
      R"({"sha": ")" + sha + R"(", "siblings": [{"rfilename": "../../x", "size": 1, "blobId": ")" + sha + R"("}]})",
      "o/r");
  ASSERT_FALSE(evil.ok());
  EXPECT_THAT(evil.error(), HasSubstr("refusing the repository file name '../../x'"));
}

}  // namespace
}  // namespace pagoda::hub
