// OpenAI's Responses API end to end: `pagoda serve` with the bundled model driven by the official openai npm
// package (node_clients/responses_test.mjs: responses.create and responses.stream with text, json_schema output
// and function tools, the events in order, previous_response_id refused).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

TEST(ServerResponsesTest, TheOpenAiSdksResponsesCreateAndStreamWorkUnchanged) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/openai"))
      << "the openai npm package is missing: `make test` installs it (npm ci in " << dir << ")";
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string out =
      run_command("node " + dir + "/responses_test.mjs http://127.0.0.1:" + std::to_string(server.port()) + " 2>&1");
  EXPECT_THAT(out, HasSubstr("all checks passed")) << out;
}

}  // namespace
}  // namespace pagoda::e2e
