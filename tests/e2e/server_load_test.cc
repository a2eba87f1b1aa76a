// Load on the real server (bounded in count and time, loopback only): 256 concurrent streams to completion
// with a handful of server threads, and SIGTERM in the middle of a load.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server_process.h"

namespace pagoda::e2e {
namespace {

using nlohmann::json;

int thread_count(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

struct StreamOutcome {
  int status = 0;
  bool done = false;      // ended with data: [DONE]
  bool finished = false;  // a chunk carried a finish_reason
  bool error = false;     // an error event came instead
  int num_chunks = 0;
};

StreamOutcome stream_completion(int port, const std::string& body) {
  StreamOutcome o;
  const HttpReply r = http_request(port, "POST", "/v1/completions", body, {}, std::chrono::seconds(120));
  o.status = r.status;
  for (const std::string& e : sse_payloads(r.body)) {
    if (e == "[DONE]") {
      o.done = true;
      continue;
    }
    const json j = json::parse(e, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("error")) o.error = true;
    if (j.contains("choices") && !j["choices"].empty()) {
      ++o.num_chunks;
      if (!j["choices"][0]["finish_reason"].is_null()) o.finished = true;
    }
  }
  return o;
}

TEST(ServerLoadTest, Holds256ConcurrentStreamsToTheEndWithoutLeakingBlocks) {
  ServerProcess server({"--batch-size", "256", "--max-batched-tokens", "512"});
  ASSERT_TRUE(server.started()) << server.log();
  constexpr int kStreams = 256;
  std::vector<StreamOutcome> outcomes(kStreams);
  std::atomic<int> max_threads{0};
  std::atomic<bool> running{true};
  std::thread watcher([&] {
    while (running) {
      max_threads = std::max(max_threads.load(), thread_count(server.pid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.emplace_back([&, i] {
      const json body = {{"prompt", "Once upon a time " + std::to_string(i)},
                         {"max_tokens", 24},
                         {"temperature", 0.8},
                         {"seed", i},
                         {"stream", true}};
      outcomes[size_t(i)] = stream_completion(server.port(), body.dump());
    });
  }
  for (std::thread& t : clients) t.join();
  running = false;
  watcher.join();
  for (int i = 0; i < kStreams; ++i) {
    const StreamOutcome& o = outcomes[size_t(i)];
    EXPECT_EQ(o.status, 200) << "stream " << i;
    EXPECT_TRUE(o.done && o.finished && !o.error) << "stream " << i << " chunks " << o.num_chunks;
  }
  // A few I/O threads, the engine's loop and its compute pool: not one thread per connection.
  EXPECT_LT(max_threads.load(), 16) << "threads in the server during the load";
  // Back to zero running and every block free.
  std::string m;
  for (int tries = 0; tries < 200; ++tries) {
    m = http_request(server.port(), "GET", "/metrics").body;
    if (metric_value(m, "pagoda:num_requests_running") == 0.0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(metric_value(m, "pagoda:num_requests_running"), 0.0);
  EXPECT_EQ(metric_value(m, "pagoda:num_requests_waiting"), 0.0);
  EXPECT_EQ(metric_value(m, "pagoda:kv_cache_usage_perc"), 0.0);
  // Every block of the pool is free again (cached prompt blocks count as free: they are evictable).
  const size_t info = m.find("num_gpu_blocks=\"");
  ASSERT_NE(info, std::string::npos);
  EXPECT_EQ(metric_value(m, "pagoda:kv_cache_free_blocks"), std::stod(m.substr(info + 16)));
  EXPECT_EQ(metric_value(m, "pagoda:request_success_total{model_name=\"stories260K\",finished_reason=\"length\"}")
                    .value_or(0) +
                metric_value(m, "pagoda:request_success_total{model_name=\"stories260K\",finished_reason=\"stop\"}")
                    .value_or(0),
            double(kStreams));
}

TEST(ServerLoadTest, SigtermDuringLoadDrainsAndExitsZero) {
  ServerProcess server({"--drain-timeout", "0.5"});
  ASSERT_TRUE(server.started()) << server.log();
  constexpr int kStreams = 24;
  std::vector<StreamOutcome> outcomes(kStreams);
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i) {
    // Half end quickly; half would run far past the drain timeout.
    const int max_tokens = i % 2 == 0 ? 8 : 480;
    clients.emplace_back([&, i, max_tokens] {
      const json body = {
          {"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"ignore_eos", true}, {"stream", true}};
      outcomes[size_t(i)] = stream_completion(server.port(), body.dump());
    });
  }
  // Once every request is in the engine (running, waiting or done), ask it to stop.
  bool all_in = false;
  for (int tries = 0; tries < 2000 && !all_in; ++tries) {
    const std::string m = http_request(server.port(), "GET", "/metrics").body;
    all_in = metric_value(m, "pagoda:num_requests_running").value_or(0) +
                 metric_value(m, "pagoda:num_requests_waiting").value_or(0) +
                 metric_value(m, "pagoda:request_success_total{model_name=\"stories260K\",finished_reason=\"length\"}")
                     .value_or(0) >=
             kStreams;
    if (!all_in) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(all_in) << "the streams did not all reach the engine";
  server.signal(SIGTERM);
  // The signal is handled asynchronously: /health turns 503 once the drain has begun (polled, up to 5 s).
  HttpReply health;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       std::chrono::steady_clock::now() < deadline;) {
    health = http_request(server.port(), "GET", "/health", "", {}, std::chrono::seconds(5));
    if (health.status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(health.status, 503);
  const HttpReply refused =
      http_request(server.port(), "POST", "/v1/completions", R"({"prompt": "x"})", {}, std::chrono::seconds(5));
  EXPECT_EQ(refused.status, 503);
  for (std::thread& t : clients) t.join();
  int completed = 0, errored = 0;
  for (int i = 0; i < kStreams; ++i) {
    const StreamOutcome& o = outcomes[size_t(i)];
    EXPECT_EQ(o.status, 200) << "stream " << i;
    EXPECT_TRUE(o.done) << "stream " << i << " ended without [DONE]";
    EXPECT_TRUE(o.finished != o.error) << "stream " << i << ": completed or a clear error, one of them";
    completed += o.finished;
    errored += o.error;
  }
  EXPECT_GT(errored, 0) << "480-token streams cannot finish in a 0.5 s drain";
  EXPECT_GE(completed, kStreams / 2);
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(20)), 0) << server.log();
}

}  // namespace
}  // namespace pagoda::e2e
