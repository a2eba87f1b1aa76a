// MatryoshkaDimensions: the flag's forms (any, none, a list) and their errors, the start-up description, a
// request's `dimensions` checked against the declaration (the width always accepted, larger or undeclared sizes a
// 400 naming the field), and truncation keeping the first values.
#include "server/matryoshka_dimensions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

using ::testing::HasSubstr;

TEST(MatryoshkaDimensionsTest, FlagForms) {
  Result<MatryoshkaDimensions> any = parse_matryoshka_dimensions("any", 128, "--m");
  ASSERT_TRUE(any.ok()) << any.error();
  EXPECT_TRUE(any->any);
  EXPECT_TRUE(any->truncatable());
  Result<MatryoshkaDimensions> none = parse_matryoshka_dimensions("none", 128, "--m");
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(none->truncatable());
  Result<MatryoshkaDimensions> list = parse_matryoshka_dimensions("64,32,128,32", 128, "--m");
  ASSERT_TRUE(list.ok()) << list.error();
  EXPECT_FALSE(list->any);
  EXPECT_EQ(list->allowed, (std::vector<int32_t>{32, 64, 128}));  // sorted, once each
  for (const char* bad : {"", "64,", ",64", "6x", "sixty", "64;128"}) {
    Result<MatryoshkaDimensions> r = parse_matryoshka_dimensions(bad, 128, "--m");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.error(), HasSubstr("--m must be any, none or a list of sizes")) << bad;
  }
  for (const char* out_of_range : {"0", "-1", "129", "32,256"}) {
    Result<MatryoshkaDimensions> r = parse_matryoshka_dimensions(out_of_range, 128, "--m");
    ASSERT_FALSE(r.ok()) << out_of_range;
    EXPECT_THAT(r.error(), HasSubstr("is not a size of this model's 128-dimension embeddings")) << out_of_range;
  }
}

TEST(MatryoshkaDimensionsTest, Description) {
  EXPECT_EQ(describe_matryoshka_dimensions({.any = true, .allowed = {}}, 1024), "any size up to 1024");
  EXPECT_EQ(describe_matryoshka_dimensions({}, 1024), "none");
  EXPECT_EQ(describe_matryoshka_dimensions({.any = false, .allowed = {32, 64}}, 128), "32, 64 (and 128)");
  EXPECT_EQ(describe_matryoshka_dimensions({.any = false, .allowed = {32, 128}}, 128), "32, 128");
}

TEST(MatryoshkaDimensionsTest, RequestedSizesAgainstTheDeclaration) {
  const MatryoshkaDimensions none, any{.any = true, .allowed = {}}, listed{.any = false, .allowed = {32, 64}};
  for (const MatryoshkaDimensions& m : {none, any, listed}) {
    EXPECT_FALSE(check_embedding_dimensions(128, 128, m)) << "the width itself cuts nothing";
    std::optional<ApiError> larger = check_embedding_dimensions(129, 128, m);
    ASSERT_TRUE(larger);
    EXPECT_EQ(larger->http_status, 400);
    EXPECT_EQ(larger->param, "dimensions");
    EXPECT_THAT(larger->message, HasSubstr("more than this model's embeddings have (128)"));
  }
  std::optional<ApiError> refused = check_embedding_dimensions(64, 128, none);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->param, "dimensions");
  EXPECT_THAT(refused->message, HasSubstr("does not declare Matryoshka"));
  EXPECT_FALSE(check_embedding_dimensions(1, 128, any));
  EXPECT_FALSE(check_embedding_dimensions(77, 128, any));
  EXPECT_FALSE(check_embedding_dimensions(32, 128, listed));
  EXPECT_FALSE(check_embedding_dimensions(64, 128, listed));
  std::optional<ApiError> unlisted = check_embedding_dimensions(48, 128, listed);
  ASSERT_TRUE(unlisted);
  EXPECT_EQ(unlisted->param, "dimensions");
  EXPECT_THAT(unlisted->message, HasSubstr("Matryoshka sizes are 32, 64 (and 128)"));
}

TEST(MatryoshkaDimensionsTest, TruncationKeepsTheFirstValues) {
  std::vector<float> v = {3, 4, 12, 5};
  truncate_embedding(v, 4);
  EXPECT_EQ(v, (std::vector<float>{3, 4, 12, 5}));
  truncate_embedding(v, 10);
  EXPECT_EQ(v.size(), 4u);
  truncate_embedding(v, 2);
  EXPECT_EQ(v, (std::vector<float>{3, 4}));
}

}  // namespace
}  // namespace pagoda::server
