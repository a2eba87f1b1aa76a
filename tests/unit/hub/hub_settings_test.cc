// Tests for the Hugging Face environment variables: endpoint, token (variable, then $HF_HOME/token), offline, and the
// cache folder's order of precedence.
#include "hub/hub_settings.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "support/temp_dir_test.h"

namespace pagoda::hub {
namespace {

class HubSettingsTest : public testing_support::TempDirTest {};

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST_F(HubSettingsTest, DefaultsAndOverrides) {
  auto d = hub_settings_from_environment(env_of({{"HOME", "/home/u"}}));
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->endpoint, "https://huggingface.co");
  EXPECT_EQ(d->cache_dir, "/home/u/.cache/huggingface/hub");
  EXPECT_FALSE(d->offline);
  EXPECT_EQ(d->token, "");

  auto x = hub_settings_from_environment(env_of({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/x"}}));
  EXPECT_EQ(x->cache_dir, "/x/huggingface/hub");
  auto h = hub_settings_from_environment(
      env_of({{"HF_HOME", "/hf"}, {"HF_ENDPOINT", "http://mirror:8080/"}, {"HF_HUB_OFFLINE", "1"}, {"HF_TOKEN", " t "}}));
  EXPECT_EQ(h->cache_dir, "/hf/hub");
  EXPECT_EQ(h->endpoint, "http://mirror:8080");
  EXPECT_TRUE(h->offline);
  EXPECT_EQ(h->token, "t");
  auto c = hub_settings_from_environment(env_of({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", "/c"}, {"HF_HUB_OFFLINE", "no"}}));
  EXPECT_EQ(c->cache_dir, "/c");
  EXPECT_FALSE(c->offline);
  EXPECT_FALSE(hub_settings_from_environment(env_of({})).ok());
}

TEST_F(HubSettingsTest, TokenFileUnderHfHome) {
  std::ofstream(path("token")) << "hf_secret\n";
  auto s = hub_settings_from_environment(env_of({{"HF_HOME", dir_.string()}}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->token, "hf_secret");
  auto v = hub_settings_from_environment(env_of({{"HF_HOME", dir_.string()}, {"HF_TOKEN", "other"}}));
  EXPECT_EQ(v->token, "other");
}

}  // namespace
}  // namespace pagoda::hub
