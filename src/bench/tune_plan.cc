// pagoda tune's estimates, choice, hints and output config.
#include "bench/tune_plan.h"

#include <fmt/format.h>

#include <algorithm>

namespace pagoda::bench {

std::string describe_candidate(const TuneCandidate& c) {
  return fmt::format("{} weights, {} KV, block {}, {} tokens/step, batch {}", ablation_weights_name(c.weights),
                     kv_dtype_name(c.kv_dtype), c.block_size, c.max_batched_tokens, c.batch_size);
}

bool meets_slo(const AblationFigures& f, const TuneSlo& slo) {
  return (!slo.ttft_p99_ms || f.ttft_p99_ms <= *slo.ttft_p99_ms) &&
         (!slo.tpot_p99_ms || f.tpot_p99_ms <= *slo.tpot_p99_ms);
}

namespace {

// True when a is better than b by the scenario's objective.
bool better(const AblationFigures& a, const AblationFigures& b, AblationScenario scenario) {
  if (scenario == AblationScenario::kOffline) return a.output_tok_s > b.output_tok_s;
  if (a.tpot_p99_ms != b.tpot_p99_ms) return a.tpot_p99_ms < b.tpot_p99_ms;
  return a.ttft_p99_ms < b.ttft_p99_ms;
}

}  // namespace

TuneChoice choose_trial(std::span<const TuneTrial> trials, AblationScenario scenario, const TuneSlo& slo) {
  TuneChoice choice;
  bool found = false;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!meets_slo(trials[i].figures, slo)) continue;
    if (!found || better(trials[i].figures, trials[choice.index].figures, scenario)) choice.index = i;
    found = true;
  }
  choice.met_slo = found;
  if (!found)
    for (size_t i = 1; i < trials.size(); ++i)
      if (better(trials[i].figures, trials[choice.index].figures, scenario)) choice.index = i;
  return choice;
}

double decode_ms_per_token(int64_t weight_bytes, double membw_gbps) {
  return membw_gbps > 0 ? double(weight_bytes) / (membw_gbps * 1e9) * 1e3 : 0.0;
}

std::vector<std::string> tune_hints(std::span<const TuneTrial> trials, const TuneChoice& choice,
                                    AblationScenario scenario, const TuneSlo& slo, const TuneEstimates& e) {
  std::vector<std::string> hints;
  if (trials.empty()) return hints;
  const TuneTrial& t = trials[choice.index];
  const AblationFigures& f = t.figures;
  if (!choice.met_slo)
    hints.push_back(fmt::format(
        "no configuration met the SLOs ({}{}); the best by the objective has TTFT p99 {:.0f} ms, TPOT p99 {:.1f} ms: "
        "relax them, "
        "lower the request rate, or use a smaller model",
        slo.ttft_p99_ms ? fmt::format("TTFT p99 <= {:.0f} ms", *slo.ttft_p99_ms) : std::string(),
        slo.tpot_p99_ms ? fmt::format("{}TPOT p99 <= {:.1f} ms", slo.ttft_p99_ms ? ", " : "", *slo.tpot_p99_ms)
                        : std::string(),
        f.ttft_p99_ms, f.tpot_p99_ms));
  if (f.ttft_mean_ms > 0 && f.ttft_p99_ms > 2.0 * f.ttft_mean_ms)
    hints.push_back(fmt::format(
        "TTFT spikes: p99 {:.0f} ms is {:.1f}x the mean: prompts wait behind other prompts' prefill; a smaller "
        "chunked-prefill budget (--max-batched-tokens) spreads long prompts over steps",
        f.ttft_p99_ms, f.ttft_p99_ms / f.ttft_mean_ms));
  if (f.tpot_mean_ms > 0 && f.tpot_p99_ms > 1.5 * f.tpot_mean_ms)
    hints.push_back(fmt::format(
        "TPOT jitter: p99 {:.1f} ms is {:.1f}x the mean: prompt chunks stretch the decode steps they share; fewer "
        "batched prefill tokens (--max-prefill-with-decodes N, or a lower --max-batched-tokens)",
        f.tpot_p99_ms, f.tpot_p99_ms / f.tpot_mean_ms));
  const double bound_ms = decode_ms_per_token(e.weight_bytes[size_t(t.candidate.weights)], e.membw_gbps);
  if (bound_ms > 0 && f.tpot_mean_ms > 3.0 * bound_ms)
    hints.push_back(fmt::format(
        "decode runs at {:.0f}% of the bandwidth bound ({:.1f} ms per token to read {:.0f} MB of weights at {:.1f} "
        "GB/s, measured TPOT {:.1f} ms): batches are compute-bound or the cores are busy with something else; check "
        "--threads and `pagoda bench membw`",
        100.0 * bound_ms / f.tpot_mean_ms, bound_ms, double(e.weight_bytes[size_t(t.candidate.weights)]) / 1e6,
        e.membw_gbps, f.tpot_mean_ms));
  if (f.max_concurrent_seqs > 0 && f.max_concurrent_seqs < t.candidate.batch_size)
    hints.push_back(fmt::format(
        "the KV pool holds only {} sequences of this workload for a batch of {}: INT8 KV (kv_cache.dtype) or more "
        "kv_cache.max_entries",
        f.max_concurrent_seqs, t.candidate.batch_size));
  if (scenario == AblationScenario::kOffline) {
    int32_t largest_batch = 0;
    for (const TuneTrial& x : trials) largest_batch = std::max(largest_batch, x.candidate.batch_size);
    if (t.candidate.batch_size == largest_batch && trials.size() > 1)
      hints.push_back(fmt::format(
          "throughput was still best at the largest batch tried ({}): a larger batch_size (and INT8 KV to hold it) "
          "may give more",
          largest_batch));
  }
  return hints;
}

PagodaConfig tuned_config(const TuneCandidate& c, const std::string& model_path, int32_t max_seq_len,
                          int32_t kv_max_entries, const TuneSlo& slo) {
  PagodaConfig config;
  config.model = model_path;
  // The model written beside the config already holds these weights: loading it quantizes nothing again.
  config.quantization = c.weights == AblationWeights::kF32 ? "none" : std::string(ablation_weights_name(c.weights));
  config.max_seq_len = max_seq_len;
  config.batch_size = c.batch_size;
  config.kv_cache.max_entries = kv_max_entries;
  config.kv_cache.block_size = c.block_size;
  config.kv_cache.dtype = kv_dtype_name(c.kv_dtype);
  config.slo.ttft_ms = slo.ttft_p99_ms.value_or(0.0);
  config.slo.tpot_ms = slo.tpot_p99_ms.value_or(0.0);
  return config;
}

}  // namespace pagoda::bench
