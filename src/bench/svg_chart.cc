// Inline SVG charts.
#include "bench/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/html_escape.h"

namespace pagoda::bench {
namespace {

constexpr double kWidth = 720, kHeight = 380;
constexpr double kLeft = 70, kRight = 170, kTop = 36, kBottom = 56;  // margins; the legend is on the right
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// About five round tick values covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1.0;
  const double raw = (hi - lo) / 5.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  // The last tick is at or above hi, so that the axis it ends covers every value.
  for (double t = std::ceil(lo / step - 1e-9) * step;; t += step) {
    ticks.push_back(t);
    if (t >= hi - step * 1e-9 || ticks.size() > 12) break;
  }
  return ticks;
}

std::string tick_text(double v) {
  if (v == 0.0) return "0";
  const double a = std::abs(v);
  if (a >= 1e7 || a < 1e-2) return fmt::format("{:.2g}", v);
  if (a >= 100 || std::abs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

std::string frame(const std::string& title, const std::string& x_label, const std::string& y_label) {
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{3}</text>\n",
      kWidth, kHeight, kLeft, html_escape(title));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + (kWidth - kLeft - kRight) / 2,
                   kHeight - 12, html_escape(x_label));
  s += fmt::format("<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}</text>\n",
                   kTop + (kHeight - kTop - kBottom) / 2, html_escape(y_label));
  return s;
}

}  // namespace

std::vector<std::pair<double, double>> cdf_points(std::vector<double> samples) {
  std::vector<std::pair<double, double>> points;
  if (samples.empty()) return points;
  std::sort(samples.begin(), samples.end());
  const double n = double(samples.size());
  points.emplace_back(samples.front(), 0.0);
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i > 0) points.emplace_back(samples[i], double(i) / n);  // the step's riser
    points.emplace_back(samples[i], double(i + 1) / n);
  }
  return points;
}

std::string svg_line_chart(const LineChart& chart) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const ChartSeries& s : chart.series)
    for (const auto& [x, y] : s.points) {
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  y_lo = std::min(y_lo, 0.0);  // figures here are never negative: start the y axis at 0
  if (x_lo > 0 && x_lo < 0.25 * x_hi) x_lo = 0;
  const std::vector<double> xt = nice_ticks(x_lo, x_hi), yt = nice_ticks(y_lo, y_hi);
  x_lo = std::min(x_lo, xt.front()), x_hi = std::max(x_hi, xt.back());
  y_lo = std::min(y_lo, yt.front()), y_hi = std::max(y_hi, yt.back());
  if (!(x_hi > x_lo)) x_hi = x_lo + 1;
  if (!(y_hi > y_lo)) y_hi = y_lo + 1;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * pw; };
  auto py = [&](double y) { return kTop + ph - (y - y_lo) / (y_hi - y_lo) * ph; };

  std::string s = frame(chart.title, chart.x_label, chart.y_label);
  for (double t : xt)
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/><text x=\"{0:.1f}\" y=\"{3}\" "
        "text-anchor=\"middle\">{4}</text>\n",
        px(t), kTop, kTop + ph, kTop + ph + 16, tick_text(t));
  for (double t : yt)
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/><text x=\"{3}\" y=\"{4:.1f}\" "
        "text-anchor=\"end\">{5}</text>\n",
        kLeft, py(t), kLeft + pw, kLeft - 6, py(t) + 4, tick_text(t));
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft, kTop,
                   pw, ph);
  int idx = 0;
  for (const ChartSeries& series : chart.series) {
    if (series.points.empty()) continue;
    const char* color = kPalette[idx % 10];
    if (series.markers) {
      for (const auto& [x, y] : series.points)
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(x), py(y), color);
    } else {
      s += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(color) + "\" points=\"";
      for (const auto& [x, y] : series.points) s += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      s += "\"/>\n";
    }
    const double ly = kTop + 8 + 18 * idx;
    s += fmt::format(
        "<rect x=\"{0}\" y=\"{1:.1f}\" width=\"14\" height=\"10\" fill=\"{2}\"/><text x=\"{3}\" y=\"{4:.1f}\">{5}"
        "</text>\n",
        kLeft + pw + 12, ly, color, kLeft + pw + 30, ly + 9, html_escape(series.label));
    ++idx;
  }
  return s + "</svg>\n";
}

std::string svg_bar_chart(const BarChart& chart) {
  double y_hi = 0;
  for (const auto& [label, v] : chart.bars) y_hi = std::max(y_hi, v);
  const std::vector<double> yt = nice_ticks(0, y_hi > 0 ? y_hi : 1);
  y_hi = yt.back();
  const double right = 20, pw = kWidth - kLeft - right, ph = kHeight - kTop - kBottom;
  auto py = [&](double y) { return kTop + ph - y / y_hi * ph; };
  std::string s = frame(chart.title, "", chart.y_label);
  for (double t : yt)
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/><text x=\"{3}\" y=\"{4:.1f}\" "
        "text-anchor=\"end\">{5}</text>\n",
        kLeft, py(t), kLeft + pw, kLeft - 6, py(t) + 4, tick_text(t));
  const double slot = chart.bars.empty() ? pw : pw / double(chart.bars.size());
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const auto& [label, v] = chart.bars[i];
    const double x = kLeft + slot * double(i) + slot * 0.15, w = slot * 0.7;
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\">{}</text><text x=\"{:.1f}\" y=\"{}\" "
        "text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
        x, py(v), w, py(0) - py(v), kPalette[i % 10], x + w / 2, py(v) - 3, tick_text(v), x + w / 2, kTop + ph + 16,
        html_escape(label));
  }
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft, kTop,
                   pw, ph);
  return s + "</svg>\n";
}

}  // namespace pagoda::bench
