// `pagoda bench serve --base-url URL [--endpoint /v1/completions|/v1/chat/completions] --num-prompts N
// --request-rate R|inf [--burstiness B] [--max-concurrency C] --dataset random|sharegpt:FILE|FILE.jsonl
// [--input-len I --output-len O --range-ratio X] [--seed S] [--percentiles 50,90,99] [--model NAME]
// [-m GGUF] [--json OUT] [--report DIR]`: flags, prompt preparation with the model's tokenizer, the progress line and
// the printed result.
#include "cli/bench_serve_command.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "assets/bundled_model.h"
#include "bench/arrival_schedule.h"
#include "bench/serve_client.h"
#include "bench/serve_dataset.h"
#include "bench/serve_html_report.h"
#include "bench/serve_report.h"
#include "bench/spec_metrics.h"
#include "cli/common_options.h"
#include "cli/progress.h"
#include "format/gguf_reader.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda::cli {
namespace {

struct ServeCliOptions {
  std::string base_url = "http://127.0.0.1:8080";
  std::string endpoint = "/v1/completions";
  int32_t num_prompts = 100;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  int32_t max_concurrency = 0;
  std::string dataset = "random";
  int32_t input_len = 128;
  std::optional<int32_t> output_len;  // default 128 for random; a file's own lengths otherwise
  double range_ratio = 0.0;
  uint64_t seed = 0;
  std::string percentiles = "99";
  std::optional<std::string> model_name;
  std::optional<std::string> api_key;
  std::string tokenizer_model;  // GGUF whose tokenizer counts and builds prompts; "" = the bundled model
  std::optional<std::string> json_path;
  std::string report_dir;
  double request_timeout_s = 600;
};

Result<double> parse_rate(const std::string& text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  try {
    size_t used = 0;
    const double r = std::stod(text, &used);
    if (used == text.size() && r > 0 && std::isfinite(r)) return r;
  } catch (const std::exception&) {
  }
  return make_error(fmt::format("--request-rate '{}' must be a positive number or inf", text));
}

Result<std::vector<double>> parse_percentiles(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const double p = std::stod(item, &used);
      if (used == item.size() && p > 0 && p <= 100) {
        out.push_back(p);
        continue;
      }
    } catch (const std::exception&) {
    }
    return make_error(fmt::format("--percentiles '{}': each must be a number in (0, 100]", text));
  }
  if (out.empty()) return make_error("--percentiles needs at least one value");
  return out;
}

// The tokenizer borrows the file's bytes, so both live together.
struct TokenizerSource {
  std::unique_ptr<format::GgufFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
};

Result<TokenizerSource> load_tokenizer(const std::string& path) {
  TokenizerSource s;
  if (path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile f,
                            format::GgufFile::from_memory(bundled_model_gguf(), std::string(kBundledModelName)));
    s.file = std::make_unique<format::GgufFile>(std::move(f));
  } else {
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile f, format::GgufFile::open(path));
    s.file = std::make_unique<format::GgufFile>(std::move(f));
  }
  PAGODA_ASSIGN_OR_RETURN(s.tokenizer, tokenizer_from_gguf(*s.file));
  return s;
}

Result<std::vector<bench::ServePrompt>> make_prompts(const ServeCliOptions& o, const Tokenizer& tokenizer, bool chat) {
  const std::string sharegpt = "sharegpt:";
  if (o.dataset == "random") {
    bench::RandomPromptOptions r;
    r.num_prompts = o.num_prompts;
    r.input_len = o.input_len;
    r.output_len = o.output_len.value_or(128);
    r.range_ratio = o.range_ratio;
    r.as_text = chat;
    r.seed = o.seed;
    return bench::random_serve_prompts(tokenizer, r);
  }
  if (o.output_len && *o.output_len < 1) return make_error("--output-len must be at least 1");
  if (o.dataset.rfind(sharegpt, 0) == 0)
    return bench::load_sharegpt_prompts(o.dataset.substr(sharegpt.size()), tokenizer, o.num_prompts, o.output_len,
                                        o.seed);
  return bench::load_jsonl_prompts(o.dataset, tokenizer, o.num_prompts, o.output_len);
}

int bench_serve(const ServeCliOptions& o) {
  Result<bench::ServeTarget> target = bench::parse_base_url(o.base_url);
  if (!target.ok()) return report_error(target.error());
  if (o.endpoint != "/v1/completions" && o.endpoint != "/v1/chat/completions")
    return report_error(fmt::format("--endpoint '{}' must be /v1/completions or /v1/chat/completions", o.endpoint));
  if (o.num_prompts < 1) return report_error("--num-prompts must be at least 1");
  Result<double> rate = parse_rate(o.request_rate);
  if (!rate.ok()) return report_error(rate.error());
  if (!(o.burstiness > 0) || !std::isfinite(o.burstiness)) return report_error("--burstiness must be positive");
  if (o.max_concurrency < 0) return report_error("--max-concurrency must be at least 1 (or 0: unlimited)");
  if (!(o.request_timeout_s > 0)) return report_error("--request-timeout must be positive");
  Result<std::vector<double>> percents = parse_percentiles(o.percentiles);
  if (!percents.ok()) return report_error(percents.error());
  Result<TokenizerSource> tok = load_tokenizer(o.tokenizer_model);
  if (!tok.ok()) return report_error(tok.error());
  const bool chat = o.endpoint == "/v1/chat/completions";
  Result<std::vector<bench::ServePrompt>> prompts = make_prompts(o, *tok->tokenizer, chat);
  if (!prompts.ok()) return report_error(prompts.error());
  if (chat) {
    for (const bench::ServePrompt& p : *prompts)
      if (p.text.empty()) return report_error("--endpoint /v1/chat/completions needs text prompts, not token ids");
  }
  std::ofstream json_out;
  if (o.json_path) {
    json_out.open(*o.json_path);
    if (!json_out) return report_error(fmt::format("{}: cannot open for writing (--json)", *o.json_path));
  }

  bench::ServeClientOptions client;
  client.target = *target;
  client.endpoint = o.endpoint;
  client.model = o.model_name;
  client.api_key = o.api_key;
  client.arrival_offsets_s = bench::arrival_offsets_s(o.num_prompts, *rate, o.burstiness, o.seed);
  client.max_concurrency = o.max_concurrency;
  client.request_timeout_s = o.request_timeout_s;
  std::fprintf(stderr, "pagoda: bench serve: %d requests to %s%s, rate %s req/s, burstiness %g%s, dataset %s\n",
               o.num_prompts, o.base_url.c_str(), o.endpoint.c_str(), o.request_rate.c_str(), o.burstiness,
               o.max_concurrency > 0 ? fmt::format(", at most {} at once", o.max_concurrency).c_str() : "",
               o.dataset.c_str());
  // The server's speculative decoding counters before and after the run (when its /metrics has them).
  auto spec_counters = [&]() -> std::optional<bench::SpecDecodeCounters> {
    Result<std::string> text = bench::fetch_text(*target, "/metrics", 10.0);
    return text.ok() ? bench::parse_spec_decode_counters(*text) : std::nullopt;
  };
  const std::optional<bench::SpecDecodeCounters> spec_before = spec_counters();
  Progress progress("bench serve");
  const bench::ServeRun run = bench::run_serve_requests(
      client, *prompts, [&](int32_t done, int32_t total) { progress.update(done, total, "requests"); });
  progress.finish();

  const bench::ServeMetrics metrics = bench::compute_serve_metrics(run.records, run.duration_s, *percents);
  bench::ServeRunInfo info{o.base_url, o.endpoint,   o.model_name.value_or(""), o.dataset, o.num_prompts,
                           *rate,      o.burstiness, o.max_concurrency};
  for (const bench::ServeRequestRecord& r : run.records) {
    if (!r.success) {
      std::fprintf(stderr, "pagoda: bench serve: a request failed: %s\n", r.error.c_str());
      break;
    }
  }
  std::printf("%s", bench::format_serve_report(info, metrics).c_str());
  if (spec_before) {
    if (const std::optional<bench::SpecDecodeCounters> spec_after = spec_counters())
      std::printf("%s (from the server's /metrics)\n", bench::describe_spec_decode(*spec_before, *spec_after).c_str());
  }
  if (o.json_path) {
    json_out << bench::serve_report_json(info, metrics, run.records);
    if (!json_out.flush()) return report_error(fmt::format("{}: write failed (--json)", *o.json_path));
  }
  if (!o.report_dir.empty()) {
    if (Status s = bench::serve_html_report(info, metrics, run.records).write(o.report_dir); !s.ok())
      return report_error(s.message());
    std::fprintf(stderr, "pagoda: report written to %s/index.html\n", o.report_dir.c_str());
  }
  return metrics.num_completed > 0 ? 0 : 1;
}

}  // namespace

void add_bench_serve_command(CLI::App& bench, int& exit_code) {
  auto o = std::make_shared<ServeCliOptions>();
  CLI::App* cmd = bench.add_subcommand("serve", "Load generator against an OpenAI-compatible server (vLLM's figures)");
  cmd->add_option("--base-url", o->base_url, "the server: http://HOST:PORT")->capture_default_str();
  cmd->add_option("--endpoint", o->endpoint, "/v1/completions or /v1/chat/completions")->capture_default_str();
  cmd->add_option("--num-prompts", o->num_prompts, "requests")->capture_default_str();
  cmd->add_option("--request-rate", o->request_rate, "requests/s (Poisson or gamma arrivals), or inf: all at once")
      ->capture_default_str();
  cmd->add_option("--burstiness", o->burstiness, "gamma shape of the gaps: 1 Poisson, <1 burstier")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o->max_concurrency, "requests in flight at most (0: unlimited)")
      ->capture_default_str();
  cmd->add_option("--dataset", o->dataset, "random, sharegpt:FILE or FILE.jsonl ({\"prompt\", \"output_len\"})")
      ->capture_default_str();
  cmd->add_option("--input-len", o->input_len, "random: prompt tokens (BOS included)")->capture_default_str();
  cmd->add_option("--output-len", o->output_len, "tokens to generate (default 128 for random; overrides a file's)");
  cmd->add_option("--range-ratio", o->range_ratio, "random: lengths uniform in len * [1 - X, 1 + X]")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the prompts and arrivals")->capture_default_str();
  cmd->add_option("--percentiles", o->percentiles, "comma-separated percentiles to report")->capture_default_str();
  cmd->add_option("--model", o->model_name, "the requests' \"model\" field (default: omitted)");
  cmd->add_option("-m,--tokenizer-model", o->tokenizer_model,
                  "GGUF whose tokenizer builds and counts the prompts: the server's model (default: bundled)");
  cmd->add_option("--api-key", o->api_key, "sent as Authorization: Bearer KEY");
  cmd->add_option("--request-timeout", o->request_timeout_s, "seconds before a request counts as failed")
      ->capture_default_str();
  cmd->add_option("--json", o->json_path, "also write the figures and per-request records as JSON to this file");
  cmd->add_option(
      "--report", o->report_dir,
      "also write DIR/index.html: the figures, latency CDFs, TTFT by prompt length, throughput by concurrency");
  cmd->callback([o, &exit_code] { exit_code = bench_serve(*o); });
}

}  // namespace pagoda::cli
