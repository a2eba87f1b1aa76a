// ServingMetrics: the histograms' buckets (vLLM's) and the scrape.
#include "server/serving_metrics.h"

#include "metrics/prometheus_text.h"

namespace pagoda::server {
namespace {

std::vector<double> ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}
std::vector<double> token_latency_buckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}
std::vector<double> request_latency_buckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}
// vLLM's build_1_2_5_buckets up to a large context.
std::vector<double> token_count_buckets() {
  std::vector<double> b;
  for (double scale = 1; scale <= 1e6; scale *= 10)
    for (double m : {1.0, 2.0, 5.0}) b.push_back(m * scale);
  return b;
}

}  // namespace

ServingMetrics::ServingMetrics(std::string model_name)
    : model_name_(std::move(model_name)),
      ttft_(ttft_buckets()),
      itl_(token_latency_buckets()),
      tpot_(token_latency_buckets()),
      e2e_(request_latency_buckets()),
      queue_(request_latency_buckets()),
      prefill_(request_latency_buckets()),
      decode_(request_latency_buckets()),
      prompt_tokens_(token_count_buckets()),
      generation_tokens_(token_count_buckets()) {}

void ServingMetrics::record_finished(const RequestTiming& t, FinishReason reason, int32_t num_prompt_tokens,
                                     int32_t num_output_tokens) {
  if (t.first_token_us >= 0) ttft_.observe(t.ttft_s());
  for (size_t i = 1; i < t.token_us.size(); ++i) itl_.observe(double(t.token_us[i] - t.token_us[i - 1]) * 1e-6);
  if (t.token_us.size() >= 2) tpot_.observe(t.tpot_s());
  if (t.finish_us >= 0) e2e_.observe(t.e2e_s());
  if (t.first_scheduled_us >= 0) queue_.observe(t.queue_time_s());
  if (t.first_token_us >= 0) {
    prefill_.observe(t.prefill_s());
    decode_.observe(t.decode_s());
  }
  if (reason != FinishReason::kAbort) {
    prompt_tokens_.observe(double(num_prompt_tokens));
    generation_tokens_.observe(double(num_output_tokens));
  }
}

void ServingMetrics::record_http_request(int status) {
  if (status < 400) {
    ++num_http_2xx_;
  } else if (status < 500) {
    ++num_http_4xx_;
  } else {
    ++num_http_5xx_;
  }
}

std::string ServingMetrics::render(const EngineStats& s, const CacheConfigInfo& cache, int32_t num_preparing) const {
  metrics::PrometheusText p;
  const metrics::Labels model = {{"model_name", model_name_}};
  p.gauge("pagoda:num_requests_running", "Number of requests in model execution batches.", s.num_running, model);
  p.gauge("pagoda:num_requests_waiting", "Number of requests waiting to be processed.", s.num_waiting, model);
  p.gauge("pagoda:num_requests_preparing", "Requests being parsed, templated or tokenized, not yet queued.",
          double(num_preparing), model);
  p.gauge("pagoda:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", s.kv_usage, model);
  p.counter("pagoda:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
            double(s.kv.num_prefix_query_tokens), model);
  p.counter("pagoda:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
            double(s.kv.num_prefix_hit_tokens), model);
  p.counter("pagoda:num_preemptions_total", "Cumulative number of preemption from the engine.",
            double(s.num_preemptions), model);
  p.counter("pagoda:prompt_tokens_total", "Number of prefill tokens processed.", double(s.num_prompt_tokens), model);
  p.counter("pagoda:generation_tokens_total", "Number of generation tokens processed.", double(s.num_generation_tokens),
            model);
  if (!s.spec_num_accepted_tokens_per_pos.empty()) {  // speculative decoding is on (vLLM's spec_decode_* names)
    p.counter("pagoda:spec_decode_num_drafts_total",
              "Number of spec decoding drafts (sequence-steps verifying drafts).", double(s.spec_num_drafts), model);
    p.counter("pagoda:spec_decode_num_draft_tokens_total", "Number of draft tokens.", double(s.spec_num_draft_tokens),
              model);
    p.counter("pagoda:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.",
              double(s.spec_num_accepted_tokens), model);
    p.family("pagoda:spec_decode_num_accepted_tokens_per_pos_total", "counter", "Accepted tokens per draft position.");
    for (size_t j = 0; j < s.spec_num_accepted_tokens_per_pos.size(); ++j)
      p.sample("pagoda:spec_decode_num_accepted_tokens_per_pos_total", double(s.spec_num_accepted_tokens_per_pos[j]),
               {{"model_name", model_name_}, {"position", std::to_string(j)}});
  }
  p.family("pagoda:request_success_total", "counter", "Count of successfully processed requests.");
  p.sample("pagoda:request_success_total", double(s.num_finished_stop),
           {{"model_name", model_name_}, {"finished_reason", "stop"}});
  p.sample("pagoda:request_success_total", double(s.num_finished_length),
           {{"model_name", model_name_}, {"finished_reason", "length"}});
  p.sample("pagoda:request_success_total", double(s.num_finished_abort),
           {{"model_name", model_name_}, {"finished_reason", "abort"}});
  p.histogram("pagoda:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft_.snapshot(),
              model);
  p.histogram("pagoda:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itl_.snapshot(),
              model);
  p.histogram("pagoda:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.",
              tpot_.snapshot(), model);
  p.histogram("pagoda:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2e_.snapshot(),
              model);
  p.histogram("pagoda:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
              queue_.snapshot(), model);
  p.histogram("pagoda:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
              prefill_.snapshot(), model);
  p.histogram("pagoda:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
              decode_.snapshot(), model);
  metrics::HistogramSnapshot prefill_per_step;
  prefill_per_step.upper_bounds.assign(kPrefillTokensPerStepBounds.begin(), kPrefillTokensPerStepBounds.end());
  prefill_per_step.bucket_counts.assign(s.prefill_tokens_per_decode_step.begin(),
                                        s.prefill_tokens_per_decode_step.end());
  prefill_per_step.sum = double(s.prefill_tokens_in_decode_steps);
  prefill_per_step.count = uint64_t(s.num_steps_with_decodes);
  p.histogram("pagoda:prefill_tokens_per_decode_step",
              "Prompt tokens computed by each step that also decoded (the prefill budget's use).", prefill_per_step,
              model);
  p.histogram("pagoda:request_prompt_tokens", "Number of prefill tokens processed.", prompt_tokens_.snapshot(), model);
  p.histogram("pagoda:request_generation_tokens", "Number of generation tokens processed.",
              generation_tokens_.snapshot(), model);
  p.gauge("pagoda:cache_config_info", "Information of the LLMEngine CacheConfig", 1.0,
          {{"model_name", model_name_},
           {"block_size", std::to_string(cache.block_size)},
           {"cache_dtype", cache.cache_dtype},
           {"cache_type_k", cache.cache_type_k},
           {"cache_type_v", cache.cache_type_v},
           {"enable_prefix_caching", cache.enable_prefix_caching ? "True" : "False"},
           {"num_gpu_blocks", std::to_string(cache.num_gpu_blocks)}});
  p.gauge("pagoda:kv_cache_bytes_per_token", "KV cache bytes one token takes (K and V of every layer).",
          double(cache.kv_bytes_per_token),
          {{"model_name", model_name_}, {"cache_type_k", cache.cache_type_k}, {"cache_type_v", cache.cache_type_v}});
  p.gauge("pagoda:kv_cache_free_blocks", "KV blocks not held by any sequence (cached ones included).",
          s.kv.num_free_blocks, model);
  p.family("pagoda:http_requests_total", "counter", "HTTP responses sent, by status class.");
  p.sample("pagoda:http_requests_total", double(num_http_2xx_.load()),
           {{"model_name", model_name_}, {"status", "2xx"}});
  p.sample("pagoda:http_requests_total", double(num_http_4xx_.load()),
           {{"model_name", model_name_}, {"status", "4xx"}});
  p.sample("pagoda:http_requests_total", double(num_http_5xx_.load()),
           {{"model_name", model_name_}, {"status", "5xx"}});
  return p.text();
}

}  // namespace pagoda::server
