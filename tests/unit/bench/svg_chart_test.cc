// The report pieces: the empirical CDF's steps, escaping, that a chart draws every point inside its plot area
// and a bar per value, the page's table, and the serving report's throughput-by-concurrency windows by hand.
#include "bench/svg_chart.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "bench/html_report.h"
#include "bench/serve_html_report.h"

namespace pagoda::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SvgChart, CdfIsAStepFunctionFromZeroToOne) {
  const auto p = cdf_points({3.0, 1.0, 2.0});
  const std::vector<std::pair<double, double>> want{{1, 0},       {1, 1.0 / 3}, {2, 1.0 / 3},
                                                    {2, 2.0 / 3}, {3, 2.0 / 3}, {3, 1}};
  ASSERT_EQ(p.size(), want.size());
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_DOUBLE_EQ(p[i].first, want[i].first) << i;
    EXPECT_DOUBLE_EQ(p[i].second, want[i].second) << i;
  }
  EXPECT_TRUE(cdf_points({}).empty());
}

TEST(SvgChart, LinePointsStayInsideThePlotAndLabelsAreEscaped) {
  LineChart c{"a <b> & \"c\"", "x", "y", {{"s1", {{0, 0}, {10, 5}, {250.5, 7}}, false}, {"dots", {{3, 3}}, true}}};
  const std::string svg = svg_line_chart(c);
  EXPECT_THAT(svg, HasSubstr("a &lt;b&gt; &amp; &quot;c&quot;"));
  EXPECT_THAT(svg, Not(HasSubstr("<b>")));
  EXPECT_THAT(svg, HasSubstr("<circle"));
  // Every polyline vertex lies in the plot rectangle: x in [70, 550], y in [36, 324].
  const std::regex pts("points=\"([^\"]*)\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, pts));
  std::istringstream in(m[1].str());
  int n = 0;
  for (std::string xy; in >> xy; ++n) {
    const double x = std::stod(xy.substr(0, xy.find(','))), y = std::stod(xy.substr(xy.find(',') + 1));
    EXPECT_GE(x, 70 - 1e-6);
    EXPECT_LE(x, 550 + 1e-6);
    EXPECT_GE(y, 36 - 1e-6);
    EXPECT_LE(y, 324 + 1e-6);
  }
  EXPECT_EQ(n, 3);
}

TEST(SvgChart, BarsAreAsManyAsValuesAndFitTheAxis) {
  const std::string svg = svg_bar_chart({"t", "tok/s", {{"a", 250.54}, {"b", 10}, {"c", 0}}});
  std::regex bar("<rect x=\"[0-9.]+\" y=\"([0-9.]+)\" width=\"[0-9.]+\" height=\"([0-9.]+)\" fill=\"#");
  int n = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it, ++n)
    EXPECT_GE(std::stod((*it)[1].str()), 36 - 1e-6) << "a bar above the plot";
  EXPECT_EQ(n, 3);
}

TEST(HtmlReport, TableCellsAreEscapedAndNumbersRightAligned) {
  HtmlReport page("t");
  page.add_table({"row", "x"}, {{"<base>", "1.25x"}});
  const std::string html = page.html();
  EXPECT_THAT(html, HasSubstr("<td>&lt;base&gt;</td><td class=\"n\">1.25x</td>"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

TEST(ServeHtmlReport, ThroughputByConcurrencyCountsBusyTimeAndTokensPerWindow) {
  // Two windows of 1 s. Request A: sent at 0, tokens at 0.5, 0.75, 1.5, ends at 1.5. Request B: 1.0 to 2.0,
  // tokens at 1.2 and 2.0 (the run's end falls in the last window).
  ServeRequestRecord a{true, "", 0.0, 8, 3, 0.5, 1.5, {0.25, 0.75}};
  ServeRequestRecord b{true, "", 1.0, 8, 2, 0.2, 1.0, {0.8}};
  ServeRequestRecord failed{false, "x", 0.0, 8, 0, 0, 0, {}};
  const std::vector<ServeRequestRecord> records{a, b, failed};
  const auto w = throughput_by_concurrency(records, 2.0, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_DOUBLE_EQ(w[0].first, 1.0);   // A the whole first second
  EXPECT_DOUBLE_EQ(w[0].second, 2.0);  // two tokens in it
  EXPECT_DOUBLE_EQ(w[1].first, 1.5);   // A half, B all of the second
  EXPECT_DOUBLE_EQ(w[1].second, 3.0);
}

}  // namespace
}  // namespace pagoda::bench
