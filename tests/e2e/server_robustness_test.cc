// Hostile and malformed input against the real server: every bad request gets its status code and an
// OpenAI-style error body, nothing crashes or hangs, and a normal request is served afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;
using ::testing::AnyOf;
using ::testing::HasSubstr;

void expect_served_normally(const ServerProcess& server) {
  const HttpReply r = http_request(server.port(), "POST", "/v1/completions",
                                   R"({"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], ", there was a");
}

void expect_error(const HttpReply& r, int status, const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.raw.substr(0, 400) << " (" << r.raw.size() << " bytes)";
  const json body = json::parse(r.body, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << what << ": " << r.body;
  EXPECT_TRUE(body["error"]["message"].is_string()) << what;
  EXPECT_TRUE(body["error"]["type"].is_string()) << what;
  EXPECT_TRUE(body["error"].contains("param")) << what;
  EXPECT_TRUE(body["error"].contains("code")) << what;
}

TEST(ServerRobustnessTest, MalformedRequestsGetTheirStatusCodes) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const int port = server.port();
  struct Case {
    std::string path, body;
    int status;
  };
  const std::vector<Case> cases = {
      {"/v1/completions", "{not json", 400},
      {"/v1/completions", "", 400},
      {"/v1/completions", "[1, 2]", 400},
      {"/v1/completions", R"({"max_tokens": 5})", 400},  // no prompt
      {"/v1/completions", R"({"prompt": 42})", 400},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": "ten"})", 400},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": -3})", 400},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": 100000000000})", 400},
      {"/v1/completions", R"({"prompt": "x", "temperature": -1})", 400},
      {"/v1/completions", R"({"prompt": "x", "top_p": 0})", 400},
      {"/v1/completions", R"({"prompt": "x", "n": 1000})", 400},
      {"/v1/completions", R"({"prompt": "x", "stop": [1, 2]})", 400},
      {"/v1/completions", R"({"prompt": "x", "stream": "yes"})", 400},
      {"/v1/completions", R"({"prompt": "x", "stream_options": {"include_usage": true}})", 400},
      {"/v1/completions", R"({"prompt": [1, 2, 999999]})", 400},
      {"/v1/completions", R"({"prompt": "x", "model": "not-this-one"})", 404},
      {"/v1/completions", "{\"prompt\": \"\xff\xfe invalid utf-8\"}", 400},
      {"/v1/chat/completions", R"({"messages": []})", 400},
      {"/v1/chat/completions", R"({"messages": [{"role": "robot", "content": "hi"}]})", 400},
      {"/v1/chat/completions", R"({"messages": [{"content": "hi"}]})", 400},
      {"/v1/chat/completions", R"({"messages": "hi"})", 400},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 50, "logprobs": true})", 400},
      {"/v1/nothing", "{}", 404},
  };
  for (const Case& c : cases) expect_error(http_request(port, "POST", c.path, c.body), c.status, c.body);
  // A prompt longer than the context (512 tokens): 400 with OpenAI's code.
  std::string long_prompt;
  for (int i = 0; i < 400; ++i) long_prompt += "the dog ran ";
  const HttpReply too_long = http_request(port, "POST", "/v1/completions", json({{"prompt", long_prompt}}).dump());
  expect_error(too_long, 400, "long prompt");
  EXPECT_EQ(json::parse(too_long.body)["error"]["code"], "context_length_exceeded");
  expect_error(http_request(port, "GET", "/v1/completions"), 405, "GET on a POST path");
  // 10 MB body.
  const std::string huge = R"({"prompt": ")" + std::string(10 << 20, 'a') + R"("})";
  expect_error(http_request(port, "POST", "/v1/completions", huge), 413, "10 MB body");
  // The HTTP layer's own errors speak Anthropic's shape on Anthropic's path.
  const HttpReply huge_message = http_request(port, "POST", "/v1/messages", huge);
  EXPECT_EQ(huge_message.status, 413);
  const json anthropic = json::parse(huge_message.body, nullptr, false);
  EXPECT_EQ(anthropic.value("type", ""), "error") << huge_message.body;
  EXPECT_TRUE(anthropic.contains("error") && anthropic["error"].contains("type")) << huge_message.body;
  // Not HTTP at all.
  const HttpReply garbage = parse_reply(send_raw(port, "HELLO THERE\r\n\r\n", std::chrono::seconds(5)));
  EXPECT_EQ(garbage.status, 400);
  expect_served_normally(server);
}

TEST(ServerRobustnessTest, RandomBodiesNeverCrashTheServer) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  std::mt19937 rng(20261203);
  const std::string valid = R"({"prompt": "Once", "max_tokens": 3, "temperature": 0.5, "stop": ["x"], "n": 2})";
  for (int i = 0; i < 300; ++i) {
    std::string body;
    if (i % 2 == 0) {
      body.resize(rng() % 200);
      for (char& c : body) c = char(rng() % 256);
    } else {
      body = valid;  // a valid request with a few bytes flipped, cut or duplicated
      for (int k = 0; k < 3; ++k) {
        const size_t pos = rng() % body.size();
        switch (rng() % 3) {
          case 0: body[pos] = char(rng() % 256); break;
          case 1: body.resize(pos + 1); break;
          default: body.insert(pos, body.substr(pos, rng() % 8)); break;
        }
      }
    }
    const std::string path = i % 3 == 0 ? "/v1/chat/completions" : "/v1/completions";
    const HttpReply r = http_request(server.port(), "POST", path, body, {}, std::chrono::seconds(30));
    ASSERT_THAT(r.status, AnyOf(200, 400, 404)) << "body: " << json(body).dump(-1, ' ', true);
  }
  expect_served_normally(server);
}

TEST(ServerRobustnessTest, SlowlorisAndHalfSentRequestsDoNotBlockOthers) {
  ServerProcess server({"--read-timeout", "1"});
  ASSERT_TRUE(server.started()) << server.log();
  std::vector<int> slow;
  for (int i = 0; i < 32; ++i) {
    const int fd = connect_loopback(server.port());
    ASSERT_GE(fd, 0);
    const std::string partial = i % 2 == 0 ? "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: "
                                           : "POST /v1/completions HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{\"pro";
    ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  expect_served_normally(server);  // while 32 connections dribble
  // Past the read timeout the server has closed them: a read sees the end (or an error), not a hang.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  for (int fd : slow) {
    char buf[256];
    timeval tv{3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
    }
    // 0: the server closed it; a timeout (EAGAIN) would mean it still holds the connection open.
    EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << "recv " << n << " errno " << errno;
    close(fd);
  }
  // Abrupt disconnects mid-body and mid-stream.
  for (int i = 0; i < 8; ++i) {
    const int fd = connect_loopback(server.port());
    const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 300, "stream": true, "ignore_eos": true})";
    const std::string req = "POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
                            "\r\n\r\n" + (i % 2 == 0 ? body : body.substr(0, 10));
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    if (i % 2 == 0) {
      char buf[64];
      recv(fd, buf, sizeof(buf), 0);
    }
    close(fd);
  }
  expect_served_normally(server);
  EXPECT_EQ(server.wait_exit(std::chrono::milliseconds(0)), -1) << "the server must still run";
}

}  // namespace
}  // namespace pagoda::e2e
