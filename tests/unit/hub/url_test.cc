// Tests for the hub's URL parsing: default ports, targets, redirects' Locations, path encoding, refusals.
#include "hub/url.h"

#include <gtest/gtest.h>

namespace pagoda::hub {
namespace {

TEST(UrlTest, ParsesHostsPortsAndTargets) {
  auto u = parse_url("https://huggingface.co/api/models/a/b?blobs=true");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "huggingface.co");
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->target, "/api/models/a/b?blobs=true");
  EXPECT_EQ(u->str(), "https://huggingface.co/api/models/a/b?blobs=true");
  auto local = parse_url("http://127.0.0.1:8080");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->port, "8080");
  EXPECT_EQ(local->target, "/");
  EXPECT_EQ(local->origin(), "http://127.0.0.1:8080");
  auto v6 = parse_url("http://[::1]:99/x");
  ASSERT_TRUE(v6.ok()) << v6.error();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, "99");
}

TEST(UrlTest, RefusesWhatItCannotFetch) {
  EXPECT_FALSE(parse_url("ftp://x/y").ok());
  EXPECT_FALSE(parse_url("huggingface.co/x").ok());
  EXPECT_FALSE(parse_url("http:///x").ok());
  EXPECT_FALSE(parse_url("http://x:0/").ok());
  EXPECT_FALSE(parse_url("http://x:70000/").ok());
  EXPECT_FALSE(parse_url("http://user:pw@x/").ok());
}

TEST(UrlTest, ResolvesRedirectLocations) {
  auto base = parse_url("https://huggingface.co/a/b/resolve/main/m.gguf");
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(resolve_location(*base, "https://cdn.example/x?sig=1")->str(), "https://cdn.example/x?sig=1");
  EXPECT_EQ(resolve_location(*base, "//cdn.example/y")->str(), "https://cdn.example/y");
  EXPECT_EQ(resolve_location(*base, "/c/d")->str(), "https://huggingface.co/c/d");
  EXPECT_EQ(resolve_location(*base, "n.gguf")->str(), "https://huggingface.co/a/b/resolve/main/n.gguf");
}

TEST(UrlTest, EncodesFilePaths) {
  EXPECT_EQ(encode_path("sub/model Q4.gguf"), "sub/model%20Q4.gguf");
  EXPECT_EQ(encode_path("a+b#c?.gguf"), "a%2Bb%23c%3F.gguf");
}

}  // namespace
}  // namespace pagoda::hub
