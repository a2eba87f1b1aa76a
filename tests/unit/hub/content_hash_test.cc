// Tests for the digests a download is checked against: sha256 and git's blob id, against known values.
#include "hub/content_hash.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir_test.h"

namespace pagoda::hub {
namespace {

class ContentHashTest : public testing_support::TempDirTest {};

TEST_F(ContentHashTest, KnownDigests) {
  ContentHash sha = ContentHash::sha256();
  sha.update({"abc", 3});
  EXPECT_EQ(sha.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // `git hash-object` of a file holding "hello\n".
  ContentHash git = ContentHash::git_blob(6);
  git.update({"hello\n", 6});
  EXPECT_EQ(git.hex(), "ce013625030ba8dba906f756967f9e9ca394464a");
}

TEST_F(ContentHashTest, AFilesPrefixContinuesAHash) {
  std::ofstream(path("f"), std::ios::binary) << "hello\n";
  // A git blob id of "hello\n": 4 bytes from the file, the last 2 as if they arrived after a resume.
  ContentHash git = ContentHash::for_id("ce013625030ba8dba906f756967f9e9ca394464a", 6);
  ASSERT_TRUE(hash_file_prefix(path("f"), 4, git).ok());
  git.update({"o\n", 2});
  EXPECT_EQ(git.hex(), "ce013625030ba8dba906f756967f9e9ca394464a");
  ContentHash sha = ContentHash::for_id(std::string(64, '0'), 6);
  ASSERT_TRUE(hash_file_prefix(path("f"), 6, sha).ok());
  EXPECT_EQ(sha.hex(), "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  ContentHash more = ContentHash::sha256();
  EXPECT_FALSE(hash_file_prefix(path("f"), 7, more).ok());
  EXPECT_FALSE(hash_file_prefix(path("missing"), 1, more).ok());
}

}  // namespace
}  // namespace pagoda::hub
