// The batched decode benchmark.
#include "bench/batched_bench.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/random_prompt.h"

namespace pagoda::bench {

Result<BatchedRow> run_batched_round(Engine& engine, const Tokenizer& tokenizer, int32_t prompt_len, int32_t gen_len,
                                     int32_t num_parallel, std::mt19937_64& rng) {
  if (prompt_len < 1 || gen_len < 2 || num_parallel < 1)
    return make_error("batched bench needs a prompt of at least 1 token, at least 2 generated, 1 sequence");
  // All B at once, as llama-batched-bench decodes them: the first step sees every prompt.
  std::vector<GenerateRequest> requests(static_cast<size_t>(num_parallel));
  for (GenerateRequest& r : requests) {
    r.prompt = random_prompt(tokenizer, prompt_len, rng);
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = gen_len;
  }
  Result<std::vector<RequestHandle>> queued = engine.submit_batch(std::move(requests));
  if (!queued.ok())
    return make_error(fmt::format("the batch of {} was refused: {}", num_parallel, queued.status().message()));
  std::vector<RequestHandle>& handles = *queued;
  std::vector<RequestTiming> timings;
  for (RequestHandle& h : handles) timings.push_back(*h.stream->wait_all().timing);

  int64_t start_us = timings[0].arrival_us, pp_end_us = 0, end_us = 0, generated = 0;
  for (const RequestTiming& t : timings) {
    start_us = std::min(start_us, t.arrival_us);
    pp_end_us = std::max(pp_end_us, t.first_token_us);
    end_us = std::max(end_us, t.token_us.back());
    generated += int64_t(t.token_us.size());
  }
  BatchedRow row;
  row.num_parallel = num_parallel;
  row.prompt_len = prompt_len;
  row.gen_len = gen_len;
  row.pp_tokens = int64_t(prompt_len) * num_parallel;
  row.t_pp_s = double(pp_end_us - start_us) * 1e-6;
  row.s_pp = row.t_pp_s > 0.0 ? double(row.pp_tokens) / row.t_pp_s : 0.0;
  for (const RequestTiming& t : timings)
    row.tg_tokens += std::count_if(t.token_us.begin(), t.token_us.end(), [&](int64_t us) { return us > pp_end_us; });
  row.t_tg_s = double(end_us - pp_end_us) * 1e-6;
  row.s_tg = row.t_tg_s > 0.0 ? double(row.tg_tokens) / row.t_tg_s : 0.0;
  row.t_total_s = double(end_us - start_us) * 1e-6;
  row.s_total = row.t_total_s > 0.0 ? double(row.pp_tokens + generated) / row.t_total_s : 0.0;
  return row;
}

std::string batched_table_header() {
  return fmt::format("| {:>5} | {:>5} | {:>5} | {:>8} | {:>8} | {:>9} | {:>8} | {:>8} | {:>9} | {:>8} | {:>9} |\n",
                     "PP", "TG", "B", "N_PP", "T_PP s", "S_PP t/s", "N_TG", "T_TG s", "S_TG t/s", "T s", "S t/s");
}

std::string batched_table_row(const BatchedRow& r) {
  return fmt::format(
      "| {:>5} | {:>5} | {:>5} | {:>8} | {:>8.3f} | {:>9.2f} | {:>8} | {:>8.3f} | {:>9.2f} | {:>8.3f} | {:>9.2f} |\n",
      r.prompt_len, r.gen_len, r.num_parallel, r.pp_tokens, r.t_pp_s, r.s_pp, r.tg_tokens, r.t_tg_s, r.s_tg,
      r.t_total_s, r.s_total);
}

std::string batched_rows_json(const std::vector<BatchedRow>& rows) {
  std::string s = "{\"bench\":\"batched\",\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const BatchedRow& r = rows[i];
    s += fmt::format(
        "{}{{\"pp\":{},\"tg\":{},\"b\":{},\"n_pp\":{},\"t_pp_s\":{:.4f},\"s_pp\":{:.3f},\"n_tg\":{},"
        "\"t_tg_s\":{:.4f},\"s_tg\":{:.3f},\"t_s\":{:.4f},\"s\":{:.3f}}}",
        i ? "," : "", r.prompt_len, r.gen_len, r.num_parallel, r.pp_tokens, r.t_pp_s, r.s_pp, r.tg_tokens, r.t_tg_s,
        r.s_tg, r.t_total_s, r.s_total);
  }
  return s + "]}";
}

}  // namespace pagoda::bench
