// Text and JSON of the ablation.
#include "bench/ablation_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/svg_chart.h"

namespace pagoda::bench {
namespace {

// Three significant figures for the small models' sub-millisecond steps, one decimal above 10 ms.
std::string ms(double v) { return v < 10.0 ? fmt::format("{:.3g}", v) : fmt::format("{:.1f}", v); }

}  // namespace

std::string ablation_header_text(const AblationRunInfo& i) {
  const AblationWorkload& w = i.workload;
  std::string arrivals = i.scenario == "online" ? fmt::format("Poisson arrivals at {:.2f} req/s", w.request_rate)
                                                : std::string("all at once");
  return fmt::format(
      "ablation on {}, {} scenario: {} requests ({}), {} prompt tokens ({} shared prefix) + {} output tokens each; "
      "max_seq_len {}, batch_size {}, max_batched_tokens {}, KV budget {:.2f} MiB ({} tokens of f32 KV, blocks of "
      "{}), threads {}, best of {} run(s) per row\n",
      i.model, i.scenario, w.num_requests, arrivals, w.prompt_len, w.shared_prefix_len, w.output_len,
      i.base.max_seq_len, i.base.max_num_seqs, i.base.max_batched_tokens, double(i.kv_budget_bytes) / (1 << 20),
      i.base.kv_budget_f32_tokens, i.base.block_size,
      i.base.num_threads == 0 ? std::string("all") : std::to_string(i.base.num_threads), i.num_repeats);
}

std::string ablation_table_text(const std::vector<AblationRowResult>& rows) {
  std::string s =
      fmt::format("{:<11} {:<5} {:>10} {:>10} {:>9} {:>9} {:>9} {:>5} | {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}\n", "row",
                  "wts", "TTFT mean", "TTFT p99", "TPOT mean", "TPOT p99", "out tok/s", "seqs", "TTFTx", "p99x",
                  "TPOTx", "p99x", "tok/sx", "seqsx");
  for (const AblationRowResult& r : rows) {
    const AblationFigures& f = r.measured.figures;
    const AblationRatios& x = r.ratios;
    s += fmt::format(
        "{:<11} {:<5} {:>7} ms {:>7} ms {:>6} ms {:>6} ms {:>9.2f} {:>5} | {:>6.2f} {:>6.2f} {:>6.2f} "
        "{:>6.2f} {:>6.2f} {:>6.2f}\n",
        r.row.name, r.weights_type, ms(f.ttft_mean_ms), ms(f.ttft_p99_ms), ms(f.tpot_mean_ms), ms(f.tpot_p99_ms),
        f.output_tok_s, f.max_concurrent_seqs, x.ttft_mean, x.ttft_p99, x.tpot_mean, x.tpot_p99, x.output_tok_s,
        x.max_concurrent_seqs);
  }
  s += "ratios are row / baseline: below 1 is better for TTFT and TPOT, above 1 for tok/s and seqs. seqs: sequences of "
       "this workload the KV budget holds at once.\n";
  return s;
}

std::string ablation_json(const AblationRunInfo& i, const std::vector<AblationRowResult>& rows) {
  nlohmann::json j;
  j["bench"] = "ablation";
  j["model"] = i.model;
  j["scenario"] = i.scenario;
  j["num_requests"] = i.workload.num_requests;
  j["request_rate"] = i.scenario == "online" ? nlohmann::json(i.workload.request_rate) : nlohmann::json("inf");
  j["input_len"] = i.workload.prompt_len;
  j["shared_prefix_len"] = i.workload.shared_prefix_len;
  j["output_len"] = i.workload.output_len;
  j["max_seq_len"] = i.base.max_seq_len;
  j["batch_size"] = i.base.max_num_seqs;
  j["max_batched_tokens"] = i.base.max_batched_tokens;
  j["block_size"] = i.base.block_size;
  j["kv_budget_bytes"] = i.kv_budget_bytes;
  j["repeats"] = i.num_repeats;
  nlohmann::json out = nlohmann::json::array();
  for (const AblationRowResult& r : rows) {
    const AblationFigures& f = r.measured.figures;
    const AblationRatios& x = r.ratios;
    out.push_back({{"row", r.row.name},
                   {"change", r.row.what},
                   {"weights", r.weights_type},
                   {"ttft_ms", {{"mean", f.ttft_mean_ms}, {"p99", f.ttft_p99_ms}}},
                   {"tpot_ms", {{"mean", f.tpot_mean_ms}, {"p99", f.tpot_p99_ms}}},
                   {"output_tok_s", f.output_tok_s},
                   {"max_concurrent_seqs", f.max_concurrent_seqs},
                   {"kv_blocks", r.num_kv_blocks},
                   {"peak_running", r.measured.peak_running},
                   {"prefix_hit_tokens", r.measured.num_prefix_hit_tokens},
                   {"preemptions", r.measured.num_preemptions},
                   {"duration_s", r.measured.duration_s},
                   {"ratio_to_baseline",
                    {{"ttft_mean", x.ttft_mean},
                     {"ttft_p99", x.ttft_p99},
                     {"tpot_mean", x.tpot_mean},
                     {"tpot_p99", x.tpot_p99},
                     {"output_tok_s", x.output_tok_s},
                     {"max_concurrent_seqs", x.max_concurrent_seqs}}},
                   {"ttft_samples_ms", r.measured.ttft_ms},
                   {"tpot_samples_ms", r.measured.tpot_ms}});
  }
  j["rows"] = std::move(out);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // the model path is any bytes
}

HtmlReport ablation_html_report(const AblationRunInfo& info, const std::vector<AblationRowResult>& rows) {
  HtmlReport page("pagoda bench ablation");
  page.add_paragraph(ablation_header_text(info));
  std::vector<std::vector<std::string>> cells;
  for (const AblationRowResult& r : rows) {
    const AblationFigures& f = r.measured.figures;
    const AblationRatios& x = r.ratios;
    cells.push_back({r.row.name, r.row.what, r.weights_type, ms(f.ttft_mean_ms), ms(f.ttft_p99_ms), ms(f.tpot_mean_ms),
                     ms(f.tpot_p99_ms), fmt::format("{:.2f}", f.output_tok_s), std::to_string(f.max_concurrent_seqs),
                     fmt::format("{:.2f}x", x.ttft_mean), fmt::format("{:.2f}x", x.tpot_mean),
                     fmt::format("{:.2f}x", x.output_tok_s), fmt::format("{:.2f}x", x.max_concurrent_seqs)});
  }
  page.add_table({"row", "switch turned on", "weights", "TTFT mean ms", "TTFT p99 ms", "TPOT mean ms", "TPOT p99 ms",
                  "output tok/s", "max seqs", "TTFT vs base", "TPOT vs base", "tok/s vs base", "seqs vs base"},
                 cells);
  page.add_paragraph(
      "Rows are cumulative: each keeps the switches of the rows above it. Ratios are row / baseline (below 1 is "
      "better for TTFT and TPOT, above 1 for tok/s and seqs). max seqs: sequences of this workload the fixed KV "
      "budget holds at once.");
  LineChart ttft{"TTFT CDF per row", "TTFT (ms)", "fraction of requests", {}};
  LineChart tpot{"TPOT CDF per row", "TPOT (ms)", "fraction of requests", {}};
  BarChart tok{"output tokens/s per row", "tokens/s", {}};
  BarChart seqs{"max concurrent sequences at the KV budget", "sequences", {}};
  for (const AblationRowResult& r : rows) {
    ttft.series.push_back({r.row.name, cdf_points(r.measured.ttft_ms), false});
    tpot.series.push_back({r.row.name, cdf_points(r.measured.tpot_ms), false});
    tok.bars.emplace_back(r.row.name, r.measured.figures.output_tok_s);
    seqs.bars.emplace_back(r.row.name, double(r.measured.figures.max_concurrent_seqs));
  }
  page.add_svg(svg_line_chart(ttft));
  page.add_svg(svg_line_chart(tpot));
  page.add_svg(svg_bar_chart(tok));
  page.add_svg(svg_bar_chart(seqs));
  return page;
}

}  // namespace pagoda::bench
