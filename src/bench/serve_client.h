// run_serve_requests: the load generator of `pagoda bench serve`. Sends each prompt as one streamed OpenAI
// request (stream, include_usage, ignore_eos, temperature 0, max_tokens = its output length) at its arrival
// offset, at most `max_concurrency` at once (later arrivals wait their turn, as behind vLLM's semaphore), and
// times every content chunk. One thread runs every connection on Boost.Asio coroutines; Beast and Asio stay
// inside serve_client.cc.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/serve_dataset.h"
#include "bench/serve_metrics.h"

namespace pagoda::bench {

// Where the server is: "http://HOST[:PORT][/PREFIX]" (plain HTTP; the port defaults to 80).
struct ServeTarget {
  std::string host;
  std::string port;
  std::string path_prefix;  // "" or "/prefix", no trailing slash
};
Result<ServeTarget> parse_base_url(const std::string& url);

struct ServeClientOptions {
  ServeTarget target;
  std::string endpoint = "/v1/completions";  // or "/v1/chat/completions"
  std::optional<std::string> model;          // the request's "model"; omitted when unset
  std::optional<std::string> api_key;        // Authorization: Bearer
  std::vector<double> arrival_offsets_s;     // one per prompt
  int32_t max_concurrency = 0;               // 0: unlimited
  double request_timeout_s = 600;            // a request still running then fails
};

struct ServeRun {
  std::vector<ServeRequestRecord> records;  // one per prompt, in prompt order
  double duration_s = 0;                    // first send to last completion
};

// `on_done(num_done, num_total)` runs after each request ends, on the client's thread.
ServeRun run_serve_requests(const ServeClientOptions& options, std::span<const ServePrompt> prompts,
                            const std::function<void(int32_t, int32_t)>& on_done);

// The body of a plain GET of `path` under the target (e.g. "/metrics"). Errors: the connection, a status other
// than 200, the timeout.
Result<std::string> fetch_text(const ServeTarget& target, const std::string& path, double timeout_s);

// The JSON body of one streamed request (exposed for tests).
std::string serve_request_body(const ServeClientOptions& options, const ServePrompt& prompt);

}  // namespace pagoda::bench
