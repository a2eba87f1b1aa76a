// run_batched_round: llama.cpp's batched-bench through the Engine: `num_parallel` requests of `prompt_len`
// random tokens each, submitted at once, each generating exactly `gen_len` tokens. Prefill time runs from the
// submissions to the moment every request has its first token; decode speed counts only the tokens sampled
// after that moment, when all of them are decoding together (S_TG, the figure batching is judged by).
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

struct BatchedRow {
  int32_t num_parallel = 0;
  int32_t prompt_len = 0;
  int32_t gen_len = 0;
  int64_t pp_tokens = 0;  // prompt tokens of all requests
  double t_pp_s = 0.0;    // submit -> the last first token
  double s_pp = 0.0;      // pp_tokens / t_pp_s
  int64_t tg_tokens = 0;  // tokens sampled after the last first token
  double t_tg_s = 0.0;    // the last first token -> the last token
  double s_tg = 0.0;      // tg_tokens / t_tg_s
  double t_total_s = 0.0;
  double s_total = 0.0;  // (pp_tokens + all generated tokens) / t_total_s
};

Result<BatchedRow> run_batched_round(Engine& engine, const Tokenizer& tokenizer, int32_t prompt_len, int32_t gen_len,
                                     int32_t num_parallel, std::mt19937_64& rng);
std::string batched_table_header();
std::string batched_table_row(const BatchedRow& row);
std::string batched_rows_json(const std::vector<BatchedRow>& rows);

}  // namespace pagoda::bench
