// The shared-prefix TTFT benchmark.
#include "bench/prefix_bench.h"

#include <fmt/format.h>

#include <random>

#include "bench/random_prompt.h"

namespace pagoda::bench {
namespace {

Result<RequestOutput> run_one(Engine& engine, std::vector<TokenId> prompt) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.prefill_only = true;  // TTFT: until the prompt is computed
  PAGODA_ASSIGN_OR_RETURN(RequestHandle h, engine.submit(std::move(r)));
  return h.stream->wait_all();
}

}  // namespace

Result<PrefixReport> run_prefix_bench(Engine& engine, const Tokenizer& tokenizer, const PrefixOptions& o) {
  if (o.prefix_len < 1 || o.suffix_len < 1 || o.num_rounds < 1)
    return make_error("--prefix-len, --suffix-len and --rounds must be at least 1");
  std::mt19937_64 rng(o.seed);
  PrefixReport report;
  for (int32_t round = 0; round < o.num_rounds; ++round) {
    const std::vector<TokenId> prefix = random_prompt(tokenizer, o.prefix_len, rng);
    std::vector<TokenId> first = prefix, second = prefix;
    append_random_tokens(tokenizer, o.suffix_len, rng, first);
    append_random_tokens(tokenizer, o.suffix_len, rng, second);
    PAGODA_ASSIGN_OR_RETURN(RequestOutput a, run_one(engine, std::move(first)));
    PAGODA_ASSIGN_OR_RETURN(RequestOutput b, run_one(engine, std::move(second)));
    if (!a.timing.has_value() || !b.timing.has_value()) return make_error("a request ended without its timing");
    report.first_ttft_ms += a.timing.value().ttft_s() * 1e3;
    report.second_ttft_ms += b.timing.value().ttft_s() * 1e3;
    report.second_cached_tokens += b.num_cached_tokens;
  }
  report.num_rounds = o.num_rounds;
  report.first_ttft_ms /= o.num_rounds;
  report.second_ttft_ms /= o.num_rounds;
  report.second_cached_tokens /= o.num_rounds;
  report.ttft_ratio = report.second_ttft_ms > 0.0 ? report.first_ttft_ms / report.second_ttft_ms : 0.0;
  return report;
}

std::string prefix_report_text(const PrefixReport& r) {
  return fmt::format(
      "shared prefix, mean of {} rounds:\n  first request TTFT  {:10.2f} ms\n  second request TTFT {:10.2f} ms "
      "({:.0f} prompt tokens from the prefix cache)\n  ratio               {:10.2f}x\n",
      r.num_rounds, r.first_ttft_ms, r.second_ttft_ms, r.second_cached_tokens, r.ttft_ratio);
}

std::string prefix_report_json(const PrefixReport& r) {
  return fmt::format(
      "{{\"bench\":\"prefix\",\"rounds\":{},\"first_ttft_ms\":{:.3f},\"second_ttft_ms\":{:.3f},"
      "\"second_cached_tokens\":{:.1f},\"ttft_ratio\":{:.3f}}}",
      r.num_rounds, r.first_ttft_ms, r.second_ttft_ms, r.second_cached_tokens, r.ttft_ratio);
}

}  // namespace pagoda::bench
