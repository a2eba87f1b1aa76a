// linear_percentile and LatencyStats against values computed by hand with numpy's default (linear)
// interpolation; compute_serve_metrics' vLLM definitions (TPOT, ITL, totals over successes); the report's
// labels and that its figures read back.
#include "bench/linear_percentile.h"

#include <gtest/gtest.h>

#include <sstream>

#include "bench/serve_metrics.h"
#include "bench/serve_report.h"

namespace pagoda::bench {
namespace {

TEST(LinearPercentile, MatchesNumpyLinearInterpolation) {
  const std::vector<double> four{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(linear_percentile(four, 50), 2.5);   // np.percentile([1,2,3,4], 50)
  EXPECT_DOUBLE_EQ(linear_percentile(four, 99), 3.97);  // position 2.97
  EXPECT_DOUBLE_EQ(linear_percentile(four, 0), 1.0);
  EXPECT_DOUBLE_EQ(linear_percentile(four, 100), 4.0);
  const std::vector<double> five{10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(linear_percentile(five, 90), 46.0);  // position 3.6
  EXPECT_DOUBLE_EQ(linear_percentile(five, 25), 20.0);  // an exact rank
  EXPECT_DOUBLE_EQ(linear_percentile(std::vector<double>{1, 3, 7}, 25), 2.0);
  EXPECT_DOUBLE_EQ(linear_percentile(std::vector<double>{7}, 99), 7.0);
  EXPECT_DOUBLE_EQ(linear_percentile(std::vector<double>{}, 50), 0.0);
}

TEST(LatencyStats, MeanMedianStdAndPercentilesOfUnsortedSamples) {
  const std::vector<double> percents{90, 99.9};
  const LatencyStats s = LatencyStats::of({9, 2, 4, 4, 5, 4, 5, 7}, percents);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.std_dev, 2.0);  // population std (np.std)
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  ASSERT_EQ(s.percentiles.size(), 2u);
  EXPECT_DOUBLE_EQ(s.percentiles[0].second, 7.6);     // sorted 2 4 4 4 5 5 7 9, position 6.3
  EXPECT_NEAR(s.percentiles[1].second, 8.986, 1e-9);  // position 6.993
  const LatencyStats empty = LatencyStats::of({}, percents);
  EXPECT_EQ(empty.mean, 0.0);
  EXPECT_EQ(empty.percentiles[1].second, 0.0);
}

ServeRequestRecord record(double ttft_s, double e2e_s, int32_t out, std::vector<double> itl) {
  ServeRequestRecord r;
  r.success = true;
  r.prompt_len = 10;
  r.output_tokens = out;
  r.ttft_s = ttft_s;
  r.e2e_s = e2e_s;
  r.itl_s = std::move(itl);
  return r;
}

TEST(ServeMetrics, VllmDefinitions) {
  std::vector<ServeRequestRecord> records{record(0.1, 0.5, 5, {0.1, 0.1, 0.1, 0.1}), record(0.3, 0.3, 1, {}),
                                          record(0.2, 1.2, 11, {0.05, 0.15})};
  ServeRequestRecord failed;
  failed.error = "HTTP 500";
  failed.prompt_len = 99;
  records.push_back(failed);
  const std::vector<double> percents{50};
  const ServeMetrics m = compute_serve_metrics(records, 2.0, percents);
  EXPECT_EQ(m.num_completed, 3);
  EXPECT_EQ(m.num_failed, 1);
  EXPECT_EQ(m.total_input_tokens, 30);  // the failed request's prompt does not count
  EXPECT_EQ(m.total_output_tokens, 17);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(m.output_throughput, 8.5);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 23.5);
  EXPECT_NEAR(m.ttft_ms.mean, 200.0, 1e-9);
  EXPECT_NEAR(m.e2el_ms.mean, 2000.0 / 3, 1e-9);
  // TPOT only for requests with more than one token: (0.5-0.1)/4 = 100 ms, (1.2-0.2)/10 = 100 ms.
  EXPECT_NEAR(m.tpot_ms.mean, 100.0, 1e-9);
  EXPECT_NEAR(m.itl_ms.mean, 100.0, 1e-9);  // six gaps, 600 ms
  EXPECT_NEAR(m.itl_ms.median, 100.0, 1e-9);
}

TEST(ServeReport, VllmLabelsWithFiguresThatReadBack) {
  std::vector<ServeRequestRecord> records{record(0.1, 0.5, 5, {0.1, 0.1, 0.1, 0.1})};
  const std::vector<double> percents{90, 99.5};
  const ServeMetrics m = compute_serve_metrics(records, 0.5, percents);
  ServeRunInfo info;
  const std::string text = format_serve_report(info, m);
  for (const char* label :
       {"Successful requests:", "Benchmark duration (s):", "Total input tokens:", "Total generated tokens:",
        "Request throughput (req/s):", "Output token throughput (tok/s):", "Total Token throughput (tok/s):",
        "Mean TTFT (ms):", "Median TTFT (ms):", "P90 TTFT (ms):", "P99.5 TTFT (ms):", "Mean TPOT (ms):",
        "Median ITL (ms):", "P90 E2EL (ms):"}) {
    SCOPED_TRACE(label);
    const size_t at = text.find(label);
    ASSERT_NE(at, std::string::npos) << text;
    std::istringstream value(text.substr(at + 40));
    double v = -1;
    EXPECT_TRUE(value >> v);
    EXPECT_GE(v, 0.0);
  }
  const size_t mean_ttft = text.find("Mean TTFT (ms):");
  EXPECT_EQ(text.substr(mean_ttft + 41, 7), "100.00 ") << text;  // vLLM's "{:<40} {:<10.2f}"
  const std::string json = serve_report_json(info, m, records);
  EXPECT_NE(json.find("\"p99.5_ttft_ms\""), std::string::npos);
  EXPECT_NE(json.find("\"requests\""), std::string::npos);
}

}  // namespace
}  // namespace pagoda::bench
