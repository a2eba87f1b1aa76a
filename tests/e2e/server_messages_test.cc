// Anthropic's Messages API end to end: `pagoda serve` with an API key, driven by the official @anthropic-ai/sdk
// npm package (node_clients/anthropic_test.mjs: messages.create and messages.stream, the event sequence, stop
// sequences, Anthropic-shaped errors), the key sent as x-api-key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

TEST(ServerMessagesTest, TheAnthropicSdkWorksUnchanged) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/@anthropic-ai/sdk"))
      << "@anthropic-ai/sdk is missing: `make test` installs it (npm ci in " << dir << ")";
  ServerProcess server({"--api-key", "k-123"});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string out = run_command("PAGODA_API_KEY=k-123 node " + dir + "/anthropic_test.mjs http://127.0.0.1:" +
                                      std::to_string(server.port()) + " 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
  // One log line per request, under its own path.
  EXPECT_THAT(server.log(), HasSubstr("/v1/messages"));
}

}  // namespace
}  // namespace pagoda::e2e
