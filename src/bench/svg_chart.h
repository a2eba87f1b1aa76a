// svg_chart: the plots of the benchmark reports, drawn as inline SVG text by pagoda itself (no script, no
// network): line/step charts with axes, ticks and a legend (latency CDFs, TTFT against prompt length, throughput
// against concurrency) and bar charts (one bar per ablation row). Pure functions: data in, SVG text out.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pagoda::bench {

struct ChartSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
  bool markers = false;                           // true: a dot per point, no line (a scatter)
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
};

struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<std::pair<std::string, double>> bars;  // (label under the bar, height)
};

// An <svg> element 720 x 380 px. Empty series are left out; with no point at all, the axes alone.
std::string svg_line_chart(const LineChart& chart);
std::string svg_bar_chart(const BarChart& chart);
// The empirical CDF of `samples` as a step line: (value, fraction of samples <= value), from (min, 0).
std::vector<std::pair<double, double>> cdf_points(std::vector<double> samples);

}  // namespace pagoda::bench
