// The latency benchmark: warm-up, bandwidth, one timed generation through the Engine, bandwidth again.
#include "bench/latency_bench.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <vector>

#include "bench/memory_bandwidth.h"
#include "core/check.h"
#include "engine/engine.h"
#include "engine/engine_plan.h"
#include "format/gguf_names.h"
#include "kv/kv_storage.h"

namespace pagoda::bench {
namespace {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * double(values.size() - 1);
  const size_t lo = size_t(std::floor(rank)), hi = size_t(std::ceil(rank));
  return values[lo] + (values[hi] - values[lo]) * (rank - double(lo));
}

}  // namespace

double weight_bytes_per_token(const format::GgufFile& file, int32_t vocab_size, int32_t num_experts,
                              int32_t num_experts_used) {
  const bool tied = file.find_tensor(format::gguf_tensor::kOutput) == nullptr;
  const auto is_experts = [](std::string_view name) {
    for (std::string_view stacked :
         {format::gguf_tensor::kFfnGateExps, format::gguf_tensor::kFfnUpExps, format::gguf_tensor::kFfnDownExps})
      if (name.find(std::string(".") + std::string(stacked) + ".") != std::string_view::npos) return true;
    return false;
  };
  double bytes = 0.0;
  for (const format::GgufTensorInfo& t : file.tensors()) {
    if (t.name == format::gguf_tensor::kTokenEmbedding && !tied)
      bytes += double(t.size_bytes) / double(vocab_size);
    else if (num_experts > 0 && is_experts(t.name))
      bytes += double(t.size_bytes) * double(num_experts_used) / double(num_experts);
    else
      bytes += double(t.size_bytes);
  }
  return bytes;
}

namespace {

double process_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

}  // namespace

Result<LatencyReport> run_latency_bench(const LoadedModel& model, int32_t num_threads, const LatencyOptions& o) {
  const ModelConfig& c = model.model->config();
  PAGODA_CHECK((o.prompt.empty() ? o.prompt_len : int32_t(o.prompt.size())) >= 1 && o.num_generated >= 2);
  const int32_t prompt_len = o.prompt.empty() ? o.prompt_len : int32_t(o.prompt.size());
  // One sequence, its prompt in one step (as llama-bench's pp), then a token a step.
  // No prefix cache: the warm-up's prompt is the timed one's start. The prompt in one step; decode steps take the
  // last token and up to num_speculative_tokens drafts.
  EngineConfig ec = single_sequence_engine_config(prompt_len + o.num_generated, o.block_size, o.kv_types,
                                                  std::max(prompt_len, 1 + o.num_speculative_tokens), num_threads);
  ec.spec = o.spec;
  ec.scheduler.num_speculative_tokens = o.num_speculative_tokens;
  ec.scheduler.adaptive_num_speculative_tokens = o.adaptive_num_speculative_tokens;
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(*model.model, *model.tokenizer, ec));

  // Random ordinary tokens (past the 3 specials and 256 byte pieces when the vocabulary has them).
  const int32_t first_id = c.vocab_size > 512 ? 259 : 3;
  std::vector<TokenId> prompt = o.prompt;
  if (prompt.empty()) {
    prompt.resize(size_t(o.prompt_len));
    uint64_t state = o.seed;
    for (TokenId& t : prompt) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      t = first_id + TokenId((state >> 33) % uint64_t(c.vocab_size - first_id));
    }
    if (model.tokenizer->bos_id() >= 0) prompt[0] = model.tokenizer->bos_id();
  }

  GenerateRequest request;
  request.sampling.temperature = 0.0f;
  request.sampling.ignore_eos = true;

  // Warm-up: faults the mapped weights in and warms the caches, so the timed run measures steady state.
  request.prompt.assign(prompt.begin(), prompt.begin() + int64_t(std::min<size_t>(prompt.size(), 16)));
  request.sampling.max_tokens = 4;
  PAGODA_ASSIGN_OR_RETURN(RequestHandle warm_up, engine->submit(request));
  warm_up.stream->wait_all();

  LatencyReport r;
  r.prompt_len = prompt_len;
  r.num_generated = o.num_generated;
  r.num_threads = engine->num_threads();
  const double bw_before = o.membw_gbps ? *o.membw_gbps : read_bandwidth_gbps(r.num_threads);

  request.prompt = prompt;
  request.sampling.max_tokens = o.num_generated;
  const EngineStats before = engine->stats();
  const double cpu_before_us = process_cpu_us();
  PAGODA_ASSIGN_OR_RETURN(RequestHandle timed, engine->submit(std::move(request)));
  const RequestOutput out = timed.stream->wait_all();
  const double cpu_us = process_cpu_us() - cpu_before_us;
  const EngineStats after = engine->stats();
  const double bw_after = o.membw_gbps ? *o.membw_gbps : read_bandwidth_gbps(r.num_threads);

  const RequestTiming& t = *out.timing;
  std::vector<double> tpot_ms;
  for (size_t i = 1; i < t.token_us.size(); ++i) tpot_ms.push_back(double(t.token_us[i] - t.token_us[i - 1]) / 1000.0);
  r.prefill_tok_s = double(prompt_len) / t.prefill_s();
  r.ttft_ms = t.ttft_s() * 1e3;
  r.tpot_ms_mean = t.tpot_s() * 1e3;
  r.tpot_ms_p50 = percentile(tpot_ms, 50);
  r.tpot_ms_p99 = percentile(tpot_ms, 99);
  r.decode_tok_s = r.tpot_ms_mean > 0.0 ? 1000.0 / r.tpot_ms_mean : 0.0;
  r.weight_bytes_per_token = weight_bytes_per_token(*model.file, c.vocab_size, c.num_experts, c.num_experts_used);
  const double mean_context = double(prompt_len) + double(o.num_generated) / 2.0;
  r.kv_bytes_per_token = mean_context * double(KvStorage::bytes_per_token(c.kv_shape(), o.kv_types));
  r.kv_types = o.kv_types;
  r.kv_cache_bytes_per_token = KvStorage::bytes_per_token(c.kv_shape(), o.kv_types);
  r.kv_v_in_k = c.kv_shape().v_in_k;
  r.kv_capacity = kv_capacity_by_type(c.kv_shape(), kKvCapacityBudgetBytes, o.block_size, prompt_len + o.num_generated);
  r.membw_gbps = (bw_before + bw_after) / 2.0;
  r.mbu = (r.weight_bytes_per_token + r.kv_bytes_per_token) / (r.tpot_ms_mean / 1000.0) / (r.membw_gbps * 1e9);
  r.output = out.new_tokens;
  r.cpu_us_per_token = cpu_us / double(std::max<size_t>(1, out.new_tokens.size()));
  r.num_draft_tokens = after.spec_num_draft_tokens - before.spec_num_draft_tokens;
  r.num_accepted_tokens = after.spec_num_accepted_tokens - before.spec_num_accepted_tokens;
  r.num_decode_steps = after.num_steps - before.num_steps - 1;  // the prompt's step gave the first token
  r.step_fixed_us = after.step_fixed_us;
  r.step_per_token_us = after.step_per_token_us;
  return r;
}

}  // namespace pagoda::bench
