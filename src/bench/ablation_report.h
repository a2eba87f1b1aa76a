// The ablation's table (text), its JSON, and the header lines that say what was run. Formatting only.
#pragma once

#include <string>
#include <vector>

#include "bench/ablation_bench.h"
#include "bench/html_report.h"

namespace pagoda::bench {

struct AblationRunInfo {
  std::string model;
  std::string scenario;  // "online" | "offline"
  AblationWorkload workload;
  AblationEngineBase base;
  int64_t kv_budget_bytes = 0;
  int32_t num_repeats = 1;
};

std::string ablation_header_text(const AblationRunInfo& info);
// One line per row: TTFT and TPOT (mean, p99, ms), output tokens/s, max concurrent sequences at the KV budget,
// then each figure's ratio to the baseline (x).
std::string ablation_table_text(const std::vector<AblationRowResult>& rows);
std::string ablation_json(const AblationRunInfo& info, const std::vector<AblationRowResult>& rows);
// The --report page: the run, the table, CDFs of every row's TTFT and TPOT, output tokens/s and KV capacity
// per row.
HtmlReport ablation_html_report(const AblationRunInfo& info, const std::vector<AblationRowResult>& rows);

}  // namespace pagoda::bench
