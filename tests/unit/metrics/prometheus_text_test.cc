// PrometheusText: the exposition format's exact lines.
#include "metrics/prometheus_text.h"

#include <gtest/gtest.h>

namespace pagoda::metrics {
namespace {

TEST(PrometheusTextTest, CounterAndGaugeLinesWithLabels) {
  PrometheusText p;
  p.counter("x:requests_total", "Requests.", 3, {{"model_name", "m"}});
  p.gauge("x:usage", "Usage.", 0.25);
  EXPECT_EQ(p.text(),
            "# HELP x:requests_total Requests.\n# TYPE x:requests_total counter\nx:requests_total{model_name=\"m\"} 3\n"
            "# HELP x:usage Usage.\n# TYPE x:usage gauge\nx:usage 0.25\n");
}

TEST(PrometheusTextTest, HistogramBucketsAreCumulativeWithInf) {
  Histogram h({0.5, 1.0});
  h.observe(0.1);
  h.observe(0.7);
  h.observe(3.0);
  PrometheusText p;
  p.histogram("x:lat_seconds", "Latency.", h.snapshot(), {{"model_name", "m"}});
  EXPECT_EQ(p.text(),
            "# HELP x:lat_seconds Latency.\n# TYPE x:lat_seconds histogram\n"
            "x:lat_seconds_bucket{model_name=\"m\",le=\"0.5\"} 1\n"
            "x:lat_seconds_bucket{model_name=\"m\",le=\"1\"} 2\n"
            "x:lat_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3\n"
            "x:lat_seconds_sum{model_name=\"m\"} 3.8\n"
            "x:lat_seconds_count{model_name=\"m\"} 3\n");
}

TEST(PrometheusTextTest, LabelValuesAreEscaped) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  PrometheusText p;
  p.sample("x", 1, {{"k", "say \"hi\""}});
  EXPECT_EQ(p.text(), "x{k=\"say \\\"hi\\\"\"} 1\n");
}

TEST(PrometheusTextTest, SpecialValues) {
  EXPECT_EQ(format_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_value(0.0 / 0.0), "NaN");
  EXPECT_EQ(format_value(42), "42");
  EXPECT_EQ(format_value(0.125), "0.125");
}

TEST(PrometheusTextTest, MergedTextsHoldEachFamilyOnce) {
  PrometheusText a, b;
  a.gauge("g", "a gauge", 1, {{"model_name", "a"}});
  a.counter("c", "a counter", 2, {{"model_name", "a"}});
  b.gauge("g", "a gauge", 3, {{"model_name", "b"}});
  b.gauge("h", "another", 4, {{"model_name", "b"}});
  EXPECT_EQ(merge_prometheus_texts({a.text(), b.text()}),
            "# HELP g a gauge\n# TYPE g gauge\ng{model_name=\"a\"} 1\ng{model_name=\"b\"} 3\n"
            "# HELP c a counter\n# TYPE c counter\nc{model_name=\"a\"} 2\n"
            "# HELP h another\n# TYPE h gauge\nh{model_name=\"b\"} 4\n");
  EXPECT_EQ(merge_prometheus_texts({a.text()}), a.text());
}

}  // namespace
}  // namespace pagoda::metrics
