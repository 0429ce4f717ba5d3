// SvgChart: a small line/scatter chart rendered as inline SVG for the self-contained HTML report
// (report_html.h). It draws axes with "nice" ticks (linear or log), axis titles that carry the
// unit, a title, a legend below the plot that wraps onto more rows instead of overlapping the
// data, optional horizontal threshold lines (SLA bounds), shaded x bands (a burst interval) and
// marked points (the SLA-qualified point). Sized for a 1280 px page holding two charts per row:
// 12-13 px text in a 620 × ~400 viewBox that CSS may scale down.
//
// Every text is HTML-escaped. The root element is
//   <svg class="chart" data-chart="KIND" ...>
// with <g class="series" data-series="NAME">, <line class="threshold">,
// <g class="mark qualified-point">, <text class="axis-title x-title|y-title">, <g class="legend">
// so tests and browsers can find the parts.
//
// Value type; build it, then render() (const, thread-safe on a const object).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmcap::api {

struct ChartPoint {
  double x = 0;
  double y = 0;  // NaN: a gap (the line breaks there)
};

enum class LineStyle { kSolid, kDashed, kDotted };

struct ChartSeries {
  std::string name;                // legend text
  std::vector<ChartPoint> points;  // drawn in the given order
  int color_index = -1;            // palette index; -1: the series' position in the chart
  LineStyle style = LineStyle::kSolid;
  bool markers = true;    // a dot on each point
  bool line = true;       // false: scatter only
  bool in_legend = true;  // false: drawn, but not listed (extra dots of a listed series)
};

struct ChartThreshold {
  double y = 0;
  std::string label;  // e.g. "SLA P95 TTFT ≤ 1000 ms"
};

struct ChartMark {
  double x = 0;
  double y = 0;
  std::string label;  // shown beside the point and in the legend
  int color_index = 0;
  std::string css_class = "qualified-point";
};

struct ChartBand {
  double x0 = 0;
  double x1 = 0;
  std::string label;  // written at the top of the band
};

struct ChartAxis {
  std::string title;          // with the unit: "Offered rate (requests/s)"
  bool log = false;           // log10 scale (non-positive values are skipped)
  bool include_zero = true;   // linear only: the domain starts at (or spans) zero
  std::optional<double> min;  // fixed bounds (otherwise from the data)
  std::optional<double> max;
};

struct ChartOptions {
  std::string kind;  // data-chart attribute, e.g. "throughput-vs-concurrency"
  std::string title;
  ChartAxis x;
  ChartAxis y;
  int width_px = 620;
  int plot_height_px = 280;  // the plot area; title, ticks and legend add to the total height
  std::vector<std::pair<std::string, std::string>> attributes;  // extra data-* attributes
};

class SvgChart {
 public:
  explicit SvgChart(ChartOptions options);

  void add_series(ChartSeries series);
  void add_threshold(ChartThreshold threshold);
  void add_mark(ChartMark mark);
  void add_band(ChartBand band);

  // True when no series holds a drawable point.
  bool empty() const;

  // The <svg> element. An empty chart still renders its axes and says "no data".
  std::string render() const;

  // Palette of kPaletteSize colours that colour-blind readers can tell apart (Okabe-Ito without
  // its yellow, then Paul Tol's indigo, olive, wine and green, black and grey), assigned by
  // series index: series 0..11 of a chart never share a colour. The index wraps; a solid series
  // whose index is kPaletteSize or more is drawn with a dash pattern (one per lap), so two
  // series look alike only beyond 36.
  static constexpr int kPaletteSize = 12;
  static const char* color(int index);

 private:
  ChartOptions options_;
  std::vector<ChartSeries> series_;
  std::vector<ChartThreshold> thresholds_;
  std::vector<ChartMark> marks_;
  std::vector<ChartBand> bands_;
};

}  // namespace llmcap::api
