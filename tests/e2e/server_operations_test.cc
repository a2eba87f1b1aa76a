// What operators and browsers see of the real server: one log line for every request whatever its status,
// x-should-retry on errors a retry cannot fix, /version, CORS for the allowed origins only.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>


#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;

// The JSON log lines of `server` so far.
std::vector<json> log_lines(const ServerProcess& server) {
  std::vector<json> out;
  std::istringstream in(server.log());
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    // The tests' own polls of /metrics are requests too; leave them out.
    if (j.is_object() && j.value("event", "") == "request" && j.value("path", "") != "/metrics") out.push_back(j);
  }
  return out;
}

TEST(ServerOperationsTest, EveryRequestHasOneLogLineWhateverItsStatus) {
  ServerProcess server({"--log-format", "json", "--api-key", "k", "--request-timeout", "0.05", "--max-body", "100000",
                        "--batch-size", "1"});
  ASSERT_TRUE(server.started()) << server.log();
  const size_t num_startup_lines = log_lines(server).size();  // ServerProcess's own /health polls at start-up
  const std::vector<std::string> auth = {"Authorization: Bearer k"};
  struct Sent {
    int status;
    std::string path;
  };
  std::vector<Sent> sent;
  auto expect = [&](const HttpReply& r, int status, const std::string& path) {
    EXPECT_EQ(r.status, status) << path << ": " << r.raw.substr(0, 300);
    sent.push_back({status, path});
  };
  expect(http_request(server.port(), "GET", "/health"), 200, "/health");
  expect(http_request(server.port(), "POST", "/v1/completions", R"({"prompt": "Once", "max_tokens": 2})", auth), 200,
         "/v1/completions");
  expect(http_request(server.port(), "POST", "/v1/completions", R"({"prompt": 5})", auth), 400, "/v1/completions");
  expect(http_request(server.port(), "POST", "/v1/completions", R"({"prompt": "Once"})"), 401, "/v1/completions");
  expect(http_request(server.port(), "GET", "/nowhere"), 404, "/nowhere");
  expect(http_request(server.port(), "GET", "/v1/completions", "", auth), 405, "/v1/completions");
  expect(http_request(server.port(), "POST", "/v1/completions",
                      R"({"prompt": "Once", "max_tokens": 500, "n": 8, "ignore_eos": true})", auth),
         408, "/v1/completions");
  expect(http_request(server.port(), "POST", "/v1/completions", std::string(200000, ' '), auth), 413,
         "/v1/completions");
  // A stream cut by the 50 ms deadline (8 x 500 tokens one after the other take the bundled model 0.3 s or more)
  // ends with an error event and is logged as 408.
  http_request(server.port(), "POST", "/v1/completions",
               R"({"prompt": "Once", "max_tokens": 500, "n": 8, "ignore_eos": true, "stream": true})", auth);
  sent.push_back({408, "/v1/completions"});
  ASSERT_TRUE(wait_idle(server, std::chrono::seconds(5)));
  // 429 and 499 on a server without the deadline, with a random stories15M-shaped model (a few ms a token): the
  // bundled model can end a request of 2 x 400 tokens in tens of ms, before a second one arrives.
  const TempDir tmp_holder;
  const std::string model = write_slow_model(tmp_holder);
  ServerProcess slow({"-m", model, "--log-format", "json", "--batch-size", "1", "--max-queue", "2"});
  ASSERT_TRUE(slow.started()) << slow.log();
  const size_t num_slow_startup_lines = log_lines(slow).size();
  // 429: the queue holds 2; a request of 2 choices waits behind a running one, the next of 2 finds no room.
  std::jthread running([&] {
    http_request(slow.port(), "POST", "/v1/completions",
                 R"({"prompt": "Once", "max_tokens": 200, "n": 2, "ignore_eos": true, "stream": true})");
  });
  ASSERT_TRUE(wait_for_metrics(slow, std::chrono::seconds(10), [](const std::string& m) {
    return metric_value(m, "pagoda:num_requests_running").value_or(0) +
               metric_value(m, "pagoda:num_requests_waiting").value_or(0) >=
           2;
  }));
  const HttpReply full =
      http_request(slow.port(), "POST", "/v1/completions", R"({"prompt": "Once", "max_tokens": 200, "n": 2})");
  EXPECT_EQ(full.status, 429) << full.raw.substr(0, 300);
  running.join();
  ASSERT_TRUE(wait_idle(slow, std::chrono::seconds(10)));
  // 499: a client that leaves mid-stream.
  const int fd2 = connect_loopback(slow.port());
  const std::string b = R"({"prompt": "Once", "max_tokens": 200, "n": 2, "ignore_eos": true, "stream": true})";
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  ASSERT_EQ(::send(fd2, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  char buf[256];
  ASSERT_GT(recv(fd2, buf, sizeof(buf), 0), 0);
  close(fd2);
  ASSERT_TRUE(wait_idle(slow, std::chrono::seconds(10)));

  // Each request has exactly one line, with its status and path, in order.
  std::vector<json> lines;
  for (int attempt = 0; attempt < 100; ++attempt) {
    lines = log_lines(server);
    lines.erase(lines.begin(), lines.begin() + std::ptrdiff_t(num_startup_lines));
    if (lines.size() >= sent.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(lines.size(), sent.size()) << server.log();
  std::multiset<int> logged, expected;
  for (const json& l : lines) logged.insert(l["status"].get<int>());
  for (const Sent& s : sent) expected.insert(s.status);
  EXPECT_EQ(logged, expected) << server.log();
  for (const json& l : lines) {
    EXPECT_EQ(l["path"], "/" + l["path"].get<std::string>().substr(1)) << l;
    EXPECT_NE(l["method"], "-") << l;
  }
  // The second server: the stream that ran (200), the request that found no room (429), the one that left (499).
  std::vector<json> slow_lines = log_lines(slow);
  ASSERT_EQ(slow_lines.size(), num_slow_startup_lines + 3) << slow.log();
  slow_lines.erase(slow_lines.begin(), slow_lines.begin() + std::ptrdiff_t(num_slow_startup_lines));
  std::multiset<int> slow_logged;
  for (const json& l : slow_lines) slow_logged.insert(l["status"].get<int>());
  EXPECT_EQ(slow_logged, (std::multiset<int>{200, 429, 499})) << slow.log();
  EXPECT_EQ(slow_lines.back()["status"], 499);
}

TEST(ServerOperationsTest, ErrorsARetryCannotFixSaySo) {
  ServerProcess server({"--request-timeout", "0.05", "--max-body", "1000"});
  ASSERT_TRUE(server.started()) << server.log();
  auto should_retry = [](const HttpReply& r) {
    std::string h = r.headers;
    for (char& c : h) c = char(std::tolower(static_cast<unsigned char>(c)));
    return h.find("x-should-retry: false") == std::string::npos;
  };
  EXPECT_FALSE(should_retry(http_request(server.port(), "POST", "/v1/completions", R"({"prompt": 5})")));
  EXPECT_FALSE(should_retry(http_request(server.port(), "POST", "/v1/completions", std::string(2000, ' '))));
  const HttpReply timeout = http_request(server.port(), "POST", "/v1/completions",
                                         R"({"prompt": "Once", "max_tokens": 500, "n": 8, "ignore_eos": true})");
  EXPECT_EQ(timeout.status, 408);
  EXPECT_FALSE(should_retry(timeout));
  EXPECT_TRUE(should_retry(http_request(server.port(), "GET", "/health")));
}

TEST(ServerOperationsTest, VersionAndModelNameOnEveryMetric) {
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  const HttpReply v = http_request(server.port(), "GET", "/version");
  ASSERT_EQ(v.status, 200);
  EXPECT_TRUE(std::regex_match(json::parse(v.body)["version"].get<std::string>(), std::regex(R"(\d+\.\d+\.\d+)")));
  const std::string m = metrics(server);
  std::istringstream in(m);
  int num_samples = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++num_samples;
    EXPECT_NE(line.find("model_name=\"stories260K\""), std::string::npos) << line;
  }
  EXPECT_GT(num_samples, 20);
}

TEST(ServerOperationsTest, CorsForTheAllowedOriginsOnly) {
  ServerProcess server({"--allowed-origins", "http://app.example,http://other.example"});
  ASSERT_TRUE(server.started()) << server.log();
  const std::string preflight =
      "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: "
      "http://app.example\r\nAccess-Control-Request-Method: "
      "POST\r\nAccess-Control-Request-Headers: authorization, content-type\r\nConnection: close\r\n\r\n";
  const HttpReply ok = parse_reply(send_raw(server.port(), preflight, std::chrono::seconds(5)));
  EXPECT_EQ(ok.status, 204) << ok.raw;
  EXPECT_NE(ok.headers.find("Access-Control-Allow-Origin: http://app.example"), std::string::npos) << ok.raw;
  EXPECT_NE(ok.headers.find("Access-Control-Allow-Headers: authorization, content-type"), std::string::npos);
  std::string refused_preflight = preflight;
  refused_preflight.replace(refused_preflight.find("app.example"), 11, "evil.example");
  const HttpReply refused = parse_reply(send_raw(server.port(), refused_preflight, std::chrono::seconds(5)));
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.headers.find("Access-Control-Allow-Origin"), std::string::npos);
  // Responses carry the header for an allowed origin: whole, streamed and errors; never for another.
  for (const std::string& body :
       {std::string(R"({"prompt": "Once", "max_tokens": 2})"),
        std::string(R"({"prompt": "Once", "max_tokens": 2, "stream": true})"), std::string(R"({"prompt": 5})")}) {
    const HttpReply r = http_request(server.port(), "POST", "/v1/completions", body, {"Origin: http://other.example"});
    EXPECT_NE(r.headers.find("Access-Control-Allow-Origin: http://other.example"), std::string::npos) << r.raw;
    const HttpReply evil =
        http_request(server.port(), "POST", "/v1/completions", body, {"Origin: http://evil.example"});
    EXPECT_EQ(evil.headers.find("Access-Control-Allow-Origin"), std::string::npos) << evil.raw;
  }
  ServerProcess closed({});
  ASSERT_TRUE(closed.started());
  EXPECT_EQ(parse_reply(send_raw(closed.port(), preflight, std::chrono::seconds(5))).status, 403);
}

TEST(ServerOperationsTest, EveryMetricTheGrafanaDashboardUsesIsExported) {
  const std::string path = std::string(PAGODA_TEST_E2E_DIR) + "/../../deploy/grafana/pagoda-dashboard.json";
  const json dashboard = json::parse(read_file(path), nullptr, false);
  ASSERT_TRUE(dashboard.is_object()) << path;
  ServerProcess server({});
  ASSERT_TRUE(server.started()) << server.log();
  // One request, so the histograms have samples.
  ASSERT_EQ(http_request(server.port(), "POST", "/v1/completions", R"({"prompt": "Once", "max_tokens": 4})").status,
            200);
  const std::string scrape = metrics(server);
  std::set<std::string> exported;  // sample names (histograms' _bucket, _sum, _count included)
  std::istringstream in(scrape);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') exported.insert(line.substr(0, line.find_first_of("{ ")));
  // Every expression of every panel, and the variables' queries.
  std::vector<std::string> exprs;
  for (const json& panel : dashboard["panels"])
    for (const json& target : panel["targets"]) exprs.push_back(target["expr"].get<std::string>());
  for (const json& var : dashboard["templating"]["list"])
    if (var.contains("definition")) exprs.push_back(var["definition"].get<std::string>());
  ASSERT_GE(exprs.size(), 12u);
  const std::regex name(R"(pagoda:[a-z0-9_]+)");
  int num_names = 0;
  for (const std::string& e : exprs) {
    for (auto it = std::sregex_iterator(e.begin(), e.end(), name); it != std::sregex_iterator(); ++it) {
      ++num_names;
      EXPECT_TRUE(exported.count(it->str())) << it->str() << " (in " << e << ") is not exported";
    }
  }
  EXPECT_GE(num_names, 20);
  // The model variable's values are what the server labels its metrics with.
  EXPECT_NE(scrape.find("model_name=\"stories260K\""), std::string::npos);
}

TEST(ServerOperationsTest, APageOnAnotherOriginCallsTheApiOnlyWhenAllowed) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/playwright-core"))
      << "playwright-core is missing: `make test` installs it (npm ci in " << dir << ")";
  const int page_port = free_loopback_port();
  const std::string origin = "http://127.0.0.1:" + std::to_string(page_port);
  for (const bool allowed : {true, false}) {
    std::vector<std::string> args = {"--api-key", "k"};
    if (allowed) args.insert(args.end(), {"--allowed-origins", origin});
    ServerProcess server(args);
    ASSERT_TRUE(server.started()) << server.log();
    const std::string out =
        run_command("node " + dir + "/cors_test.mjs http://127.0.0.1:" + std::to_string(server.port()) +
                    (allowed ? " allowed " : " refused ") + std::to_string(page_port) + " 2>&1");
    EXPECT_NE(out.find("cors ok"), std::string::npos) << (allowed ? "allowed: " : "refused: ") << out;
  }
}

}  // namespace
}  // namespace pagoda::e2e
