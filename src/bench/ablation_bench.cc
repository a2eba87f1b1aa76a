// The ablation's workload and per-row engine config.
#include "bench/ablation_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>
#include <thread>

#include "bench/ablation_models.h"
#include "bench/arrival_schedule.h"
#include "bench/kv_capacity.h"
#include "bench/latency_summary.h"
#include "bench/random_prompt.h"
#include "bench/request_driver.h"
#include "loader/loaded_model.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"

namespace pagoda::bench {

Status validate_ablation_workload(const AblationWorkload& w) {
  if (w.num_requests < 1) return make_error("--num-prompts must be at least 1");
  if (w.prompt_len < 2 || w.shared_prefix_len < 1 || w.shared_prefix_len >= w.prompt_len)
    return make_error(fmt::format("--shared-prefix ({}) must be at least 1 and below --input-len ({})",
                                  w.shared_prefix_len, w.prompt_len));
  if (w.output_len < 2) return make_error("--output-len must be at least 2 (TPOT needs two tokens)");
  if (w.scenario == AblationScenario::kOnline && !(w.request_rate > 0.0))
    return make_error("--request-rate must be positive");
  return Status();
}

int64_t kv_budget_bytes(const AblationEngineBase& base, const ModelConfig& model) {
  return int64_t(base.kv_budget_f32_tokens) * KvStorage::bytes_per_token(model.kv_shape(), KvDType::kF32);
}

Result<EngineConfig> ablation_engine_config(const AblationSettings& s, const AblationEngineBase& base,
                                            const ModelConfig& model) {
  EngineConfig c;
  c.max_seq_len = base.max_seq_len;
  c.kv_types = s.kv_dtype;
  c.num_threads = base.num_threads;
  c.kv.block_size = base.block_size;
  c.kv.num_blocks =
      int32_t(kv_budget_bytes(base, model) / KvStorage::bytes_per_block_for(model.kv_shape(), base.block_size, s.kv_dtype));
  c.kv.enable_prefix_cache = s.prefix_cache;
  c.scheduler.max_num_seqs = base.max_num_seqs;
  // Without chunked prefill a step must hold whole prompts, so its budget is at least max_seq_len (vLLM's rule
  // for max_num_batched_tokens without chunking); else a static batch would form from the one or two prompts
  // the chunk budget admits in its first step, and the baseline would be a straw man.
  c.scheduler.max_batched_tokens =
      std::max({base.max_batched_tokens, base.max_num_seqs, s.chunked_prefill ? 0 : base.max_seq_len});
  c.scheduler.chunked_prefill = s.chunked_prefill;
  // The contiguous layout caps the running sequences at what the budget reserves for (serving_baseline.h).
  PAGODA_RETURN_IF_ERROR(apply_kv_layout(s.kv_layout, c));
  return c;
}

int32_t ablation_max_concurrent_seqs(const AblationSettings& s, const AblationEngineBase& base,
                                     const ModelConfig& model, const AblationWorkload& w) {
  KvCapacityQuery q;
  q.budget_bytes = kv_budget_bytes(base, model);
  q.bytes_per_block = KvStorage::bytes_per_block_for(model.kv_shape(), base.block_size, s.kv_dtype);
  q.block_size = base.block_size;
  q.max_seq_len = base.max_seq_len;
  q.seq_len = w.prompt_len + w.output_len;
  q.shared_prefix_len = w.shared_prefix_len;
  q.layout = s.kv_layout;
  q.prefix_cache = s.prefix_cache;
  return max_concurrent_seqs(q);
}

namespace {

GenerateRequest make_request(std::vector<TokenId> prompt, int32_t output_len) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = output_len;
  return r;
}

}  // namespace

Result<AblationMeasurement> run_ablation_workload(Engine& engine, const Tokenizer& tokenizer, const AblationWorkload& w,
                                                  BatchingMode batching) {
  PAGODA_RETURN_IF_ERROR(validate_ablation_workload(w));
  std::mt19937_64 rng(w.seed);
  const std::vector<TokenId> prefix = random_prompt(tokenizer, w.shared_prefix_len, rng);
  std::vector<std::vector<TokenId>> prompts;
  for (int32_t i = 0; i < w.num_requests; ++i) {
    std::vector<TokenId> p = prefix;
    append_random_tokens(tokenizer, w.prompt_len - w.shared_prefix_len, rng, p);
    prompts.push_back(std::move(p));
  }
  const std::vector<double> offsets_s =
      w.scenario == AblationScenario::kOnline
          ? arrival_offsets_s(w.num_requests, w.request_rate, 1.0, w.seed)
          : arrival_offsets_s(w.num_requests, std::numeric_limits<double>::infinity(), 1.0, w.seed);

  {  // Warm-up: first-touch of the weights' pages and the workspace, outside the figures. Its own tokens, so
     // the prefix cache learns nothing of the workload's prefix.
    std::mt19937_64 warm_rng(w.seed ^ 0x9e3779b97f4a7c15ULL);
    Result<RequestHandle> h = engine.submit(make_request(random_prompt(tokenizer, 8, warm_rng), 2));
    if (!h.ok()) return make_error("the warm-up request was refused: " + h.status().message());
    h->stream->wait_all();
  }

  std::vector<DrivenRequest> requests;
  for (int32_t i = 0; i < w.num_requests; ++i)
    requests.push_back(DrivenRequest{make_request(std::move(prompts[size_t(i)]), w.output_len), offsets_s[size_t(i)]});
  const EngineStats before = engine.stats();
  PAGODA_ASSIGN_OR_RETURN(DriveReport driven, drive_requests(engine, std::move(requests), batching));
  AblationMeasurement m;
  for (const DrivenResult& out : driven.results) {
    m.num_output_tokens += out.num_output_tokens;
    const RequestTiming& t = out.timing;
    m.ttft_ms.push_back(t.ttft_s() * 1e3);
    if (t.token_us.size() >= 2) m.tpot_ms.push_back(t.tpot_s() * 1e3);
  }
  m.duration_s = driven.duration_s;
  const EngineStats after = engine.stats();
  m.peak_running = after.peak_num_running;
  m.num_prefix_hit_tokens = after.kv.num_prefix_hit_tokens - before.kv.num_prefix_hit_tokens;
  m.num_preemptions = after.num_preemptions - before.num_preemptions;
  const LatencySummary ttft = LatencySummary::of(m.ttft_ms);
  const LatencySummary tpot = LatencySummary::of(m.tpot_ms);
  m.figures.ttft_mean_ms = ttft.mean;
  m.figures.ttft_p99_ms = ttft.p99;
  m.figures.tpot_mean_ms = tpot.mean;
  m.figures.tpot_p99_ms = tpot.p99;
  m.figures.output_tok_s = m.duration_s > 0 ? double(m.num_output_tokens) / m.duration_s : 0.0;
  return m;
}

Result<std::vector<AblationRowResult>> run_ablation(const std::vector<AblationRow>& rows,
                                                    const AblationModelFiles& files, const AblationEngineBase& base,
                                                    const AblationWorkload& workload, int32_t num_repeats,
                                                    const std::function<void(const AblationRowResult&)>& on_row) {
  std::vector<AblationRowResult> results;
  for (const AblationRow& row : rows) {
    AblationRowResult r;
    r.row = row;
    r.weights_type = row.settings.weights == AblationWeights::kF32
                         ? files.baseline_type()
                         : std::string(ablation_weights_name(row.settings.weights));
    ModelOptions model_options;
    model_options.fusion = row.settings.fusion;
    model_options.attention = row.settings.attention;
    PAGODA_ASSIGN_OR_RETURN(LoadedModel loaded,
                            load_model(files.path(row.settings.weights), kernels::best_kernels(), model_options));
    const ModelConfig& mc = loaded.model->config();
    if (base.max_seq_len > mc.context_length)
      return make_error(
          fmt::format("--max-seq-len {} exceeds the model's context of {}", base.max_seq_len, mc.context_length));
    if (workload.prompt_len + workload.output_len > base.max_seq_len)
      return make_error(fmt::format("--input-len + --output-len = {} exceeds --max-seq-len {}",
                                    workload.prompt_len + workload.output_len, base.max_seq_len));
    PAGODA_ASSIGN_OR_RETURN(const EngineConfig config, ablation_engine_config(row.settings, base, mc));
    r.num_kv_blocks = config.kv.num_blocks;
    // Each repetition on a fresh Engine (a warm prefix cache would flatter the later ones); on a shared machine
    // the run with the most output tokens/s is the one least disturbed, so it counts (as STREAM keeps its best).
    for (int32_t rep = 0; rep < std::max(1, num_repeats); ++rep) {
      PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(*loaded.model, *loaded.tokenizer, config));
      Result<AblationMeasurement> m =
          run_ablation_workload(*engine, *loaded.tokenizer, workload, row.settings.batching);
      if (!m.ok()) return make_error(fmt::format("row {}: {}", row.name, m.error()));
      if (rep == 0 || m->figures.output_tok_s > r.measured.figures.output_tok_s) r.measured = std::move(m).value();
    }
    r.measured.figures.max_concurrent_seqs = ablation_max_concurrent_seqs(row.settings, base, mc, workload);
    r.ratios =
        ratio_to_baseline(r.measured.figures, results.empty() ? r.measured.figures : results.front().measured.figures);
    if (on_row) on_row(r);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace pagoda::bench
