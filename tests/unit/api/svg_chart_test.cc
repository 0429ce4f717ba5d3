#include "api/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>
#include <string>

namespace llmcap::api {
namespace {

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1))
    ++n;
  return n;
}

double svg_height(const std::string& svg) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(svg, m, std::regex("height=\"([0-9.]+)\"")));
  return std::stod(m[1]);
}

ChartOptions basic_options() {
  ChartOptions o;
  o.kind = "throughput-vs-concurrency";
  o.title = "Output throughput vs concurrency";
  o.x.title = "Concurrency (requests in flight)";
  o.y.title = "Output throughput (tokens/s)";
  return o;
}

TEST(SvgChartTest, RendersRootTitleAxesTicksAndLegend) {
  SvgChart chart(basic_options());
  chart.add_series({"rtx4090", {{1, 80}, {8, 500}, {32, 1200}}});
  chart.add_series({"a100", {{1, 95}, {8, 640}, {32, 1500}}});
  const auto svg = chart.render();
  EXPECT_EQ(svg.rfind("<svg class=\"chart\" data-chart=\"throughput-vs-concurrency\"", 0), 0u);
  EXPECT_NE(svg.find(">Output throughput vs concurrency</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"axis-title x-title\""), std::string::npos);
  EXPECT_NE(svg.find(">Concurrency (requests in flight)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">Output throughput (tokens/s)</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"legend-item\""), 2u);
  EXPECT_EQ(count(svg, "<g class=\"series\""), 2u);
  EXPECT_NE(svg.find("data-series=\"rtx4090\""), std::string::npos);
  // Nice linear y ticks reach past the maximum (1500) and start at zero.
  EXPECT_NE(svg.find(">0</text>"), std::string::npos);
  EXPECT_NE(svg.find(">1500</text>"), std::string::npos);
  EXPECT_EQ(svg.find("no data"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

TEST(SvgChartTest, ThresholdAndMarkedPointAreDrawnAndInLegend) {
  SvgChart chart(basic_options());
  chart.add_series({"a100", {{1, 40}, {8, 60}, {32, 400}}});
  chart.add_threshold({1000, "SLA P95 TTFT ≤ 1000 ms"});
  chart.add_mark({8, 60, "SLA-qualified point", 0, "qualified-point"});
  const auto svg = chart.render();
  EXPECT_EQ(count(svg, "<line class=\"threshold\""), 1u);
  EXPECT_NE(svg.find("data-value=\"1000\""), std::string::npos);
  EXPECT_NE(svg.find("SLA P95 TTFT ≤ 1000 ms</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"mark qualified-point\""), 1u);
  EXPECT_NE(svg.find("data-x=\"8\" data-y=\"60\""), std::string::npos);
  // series + mark + threshold in the legend; the threshold widens the y domain to include it.
  EXPECT_EQ(count(svg, "class=\"legend-item\""), 3u);
  EXPECT_NE(svg.find(">1000</text>"), std::string::npos);
}

TEST(SvgChartTest, EscapesEveryText) {
  ChartOptions o = basic_options();
  o.title = "<b>title</b> & co";
  o.x.title = "x \"quoted\"";
  o.attributes = {{"data-target", "<script>"}};
  SvgChart chart(o);
  chart.add_series({"<script>alert(1)</script>", {{1, 1}, {2, 2}}});
  chart.add_threshold({1, "<i>bound</i>"});
  const auto svg = chart.render();
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("<i>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&lt;b&gt;title&lt;/b&gt; &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("x &quot;quoted&quot;"), std::string::npos);
  EXPECT_NE(svg.find("data-target=\"&lt;script&gt;\""), std::string::npos);
}

TEST(SvgChartTest, EmptyChartSaysNoData) {
  SvgChart chart(basic_options());
  EXPECT_TRUE(chart.empty());
  chart.add_series({"nothing", {{1, std::nan("")}}});
  EXPECT_TRUE(chart.empty());
  const auto svg = chart.render();
  EXPECT_NE(svg.find(">no data</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<polyline"), std::string::npos);
}

TEST(SvgChartTest, GapsBreakTheLine) {
  SvgChart chart(basic_options());
  chart.add_series({"burst", {{0, 50}, {1, 60}, {2, std::nan("")}, {3, 70}, {4, 80}}});
  const auto svg = chart.render();
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle cx"), 4u + 1u);  // 4 markers + the legend dot
}

TEST(SvgChartTest, LogAxisUsesDecadeTicksAndSkipsNonPositive) {
  ChartOptions o = basic_options();
  o.x.log = true;
  SvgChart chart(o);
  chart.add_series({"a", {{0, 10}, {1, 10}, {64, 100}}});
  const auto svg = chart.render();
  for (const char* t : {">1</text>", ">2</text>", ">5</text>", ">10</text>", ">20</text>",
                        ">50</text>", ">100</text>"})
    EXPECT_NE(svg.find(t), std::string::npos) << t;
  EXPECT_EQ(count(svg, "<circle cx"), 2u + 1u);  // x = 0 cannot be drawn on a log axis
}

TEST(SvgChartTest, LegendWrapsOntoMoreRowsInsteadOfOverlapping) {
  SvgChart one(basic_options());
  one.add_series({"a", {{1, 1}}});
  SvgChart many(basic_options());
  for (int i = 0; i < 12; ++i)
    many.add_series({"a long series name number " + std::to_string(i), {{1.0 * i, 1}}});
  const auto svg_one = one.render();
  const auto svg_many = many.render();
  EXPECT_GT(svg_height(svg_many), svg_height(svg_one) + 3 * 19);
  // Legend texts never start past the right edge of the viewBox.
  std::regex legend_x("<g class=\"legend-item\"><line x1=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg_many.begin(), svg_many.end(), legend_x);
       it != std::sregex_iterator(); ++it) {
    EXPECT_LT(std::stod((*it)[1]), 620 - 100);
  }
}

TEST(SvgChartTest, BandIsShadedAndLabelled) {
  SvgChart chart(basic_options());
  chart.add_series({"a", {{0, 1}, {10, 2}}});
  chart.add_band({4, 7, "burst ×4"});
  const auto svg = chart.render();
  EXPECT_NE(svg.find("<g class=\"band\"><rect"), std::string::npos);
  EXPECT_NE(svg.find("burst ×4</text>"), std::string::npos);
}

TEST(SvgChartTest, TwelveDistinctColoursThenTheyWrap) {
  std::set<std::string> seen;
  for (int i = 0; i < SvgChart::kPaletteSize; ++i) seen.insert(SvgChart::color(i));
  EXPECT_EQ(seen.size(), 12u);  // e.g. a sweep's c=4 and c=64 no longer share teal
  EXPECT_STREQ(SvgChart::color(0), SvgChart::color(12));
  EXPECT_STREQ(SvgChart::color(-1), SvgChart::color(11));
}

TEST(SvgChartTest, SeriesPastTheFirstLapAreDashedAndColoursFollowTheIndex) {
  SvgChart chart(basic_options());
  for (int i = 0; i < 14; ++i)
    chart.add_series({"s" + std::to_string(i), {{0, 1.0 * i}, {10, 2.0 * i}}});
  const auto svg = chart.render();
  auto polyline_of = [&](int i) {
    const auto g = svg.find("data-series=\"s" + std::to_string(i) + "\"");
    return svg.substr(g, svg.find("/>", svg.find("<polyline", g)) - g);
  };
  EXPECT_EQ(polyline_of(11).find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(polyline_of(4).find(SvgChart::color(4)), std::string::npos);
  // Series 12 has series 0's colour but not its look.
  EXPECT_NE(polyline_of(12).find(SvgChart::color(0)), std::string::npos);
  EXPECT_NE(polyline_of(12).find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(polyline_of(0).find("stroke-dasharray"), std::string::npos);
}

TEST(SvgChartTest, SeriesOutOfTheLegendIsDrawnButNotListed) {
  SvgChart chart(basic_options());
  chart.add_series({"listed", {{0, 1}, {10, 2}}});
  ChartSeries extra{"extra dots", {{5, 1.5}}, 0, LineStyle::kSolid, true, false};
  extra.in_legend = false;
  chart.add_series(extra);
  const auto svg = chart.render();
  EXPECT_NE(svg.find("data-series=\"extra dots\""), std::string::npos);
  const auto legend = svg.substr(svg.find("<g class=\"legend\">"));
  EXPECT_NE(legend.find(">listed</text>"), std::string::npos);
  EXPECT_EQ(legend.find("extra dots"), std::string::npos);
}

}  // namespace
}  // namespace llmcap::api
