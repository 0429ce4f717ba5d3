#include "api/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "api/report_format.h"

namespace llmcap::api {

namespace {

constexpr double kMarginLeft = 74;
constexpr double kMarginRight = 26;
constexpr double kMarginTop = 40;
constexpr double kLegendRow = 19;
constexpr double kFontPx = 12.5;
constexpr const char* kThresholdColor = "#c0392b";

// Width estimate for a sans-serif label; errs wide so that wrapped legends never overlap.
double text_width(std::string_view text, double font_px) {
  double units = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) == 0x80) continue;  // UTF-8 continuation byte
    units += (c >= 'A' && c <= 'Z') ? 0.68 : 0.57;
  }
  return units * font_px;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

double nice_step(double raw) {
  if (!(raw > 0)) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return nice * mag;
}

// One axis' domain and ticks.
struct Scale {
  bool log = false;
  double lo = 0, hi = 1;
  std::vector<double> ticks;

  double fraction(double v) const {
    if (log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (v - lo) / (hi - lo);
  }
  bool drawable(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

Scale make_scale(const ChartAxis& axis, std::vector<double> values) {
  Scale s;
  s.log = axis.log;
  std::erase_if(values, [&](double v) { return !s.drawable(v); });
  double lo = values.empty() ? (s.log ? 1 : 0) : *std::min_element(values.begin(), values.end());
  double hi = values.empty() ? (s.log ? 10 : 1) : *std::max_element(values.begin(), values.end());
  if (axis.min && (!s.log || *axis.min > 0)) lo = *axis.min;
  if (axis.max && (!s.log || *axis.max > 0)) hi = *axis.max;
  if (s.log) {
    int lo_e = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
    int hi_e = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
    if (hi_e <= lo_e) hi_e = lo_e + 1;
    s.lo = std::pow(10.0, lo_e);
    s.hi = std::pow(10.0, hi_e);
    const bool dense = hi_e - lo_e <= 3;
    for (int e = lo_e; e <= hi_e; ++e) {
      for (const double m : {1.0, 2.0, 5.0}) {
        if (!dense && m != 1.0) continue;
        const double t = m * std::pow(10.0, e);
        if (t <= s.hi * (1 + 1e-9)) s.ticks.push_back(t);
      }
    }
    return s;
  }
  if (axis.include_zero && !axis.min) lo = std::min(lo, 0.0);
  if (axis.include_zero && !axis.max) hi = std::max(hi, 0.0);
  if (hi - lo < 1e-12) {
    hi = lo + (std::fabs(lo) > 0 ? std::fabs(lo) * 0.5 : 1);
  }
  const double step = nice_step((hi - lo) / 5);
  s.lo = axis.min ? lo : std::floor(lo / step + 1e-9) * step;
  s.hi = axis.max ? hi : std::ceil(hi / step - 1e-9) * step;
  if (s.hi - s.lo < 1e-12) s.hi = s.lo + step;
  for (double t = std::ceil(s.lo / step - 1e-9) * step; t <= s.hi + step * 1e-6; t += step) {
    s.ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return s;
}

// A solid series past the palette's first lap gets a dash pattern of its own lap.
std::string dash_attr(LineStyle style, int color_index = 0) {
  if (style == LineStyle::kSolid && color_index >= SvgChart::kPaletteSize) {
    static constexpr const char* kLapDash[] = {" stroke-dasharray=\"10 3 2 3\"",
                                               " stroke-dasharray=\"4 2\""};
    return kLapDash[(color_index / SvgChart::kPaletteSize - 1) % 2];
  }
  switch (style) {
    case LineStyle::kDashed: return " stroke-dasharray=\"7 4\"";
    case LineStyle::kDotted: return " stroke-dasharray=\"2 3\"";
    case LineStyle::kSolid: break;
  }
  return "";
}

// Text with a white halo so it stays readable over lines and grid.
std::string label_text(double x, double y, std::string_view text, std::string_view anchor,
                       std::string_view fill, double font_px, std::string_view css_class) {
  return "<text class=\"" + std::string(css_class) + "\" x=\"" + num(x) + "\" y=\"" + num(y) +
         "\" text-anchor=\"" + std::string(anchor) + "\" fill=\"" + std::string(fill) +
         "\" font-size=\"" + num(font_px) +
         "\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">" + html_escape(text) +
         "</text>";
}

struct LegendItem {
  enum class Kind { kSeries, kThreshold, kMark } kind;
  std::string text;
  int color_index = 0;
  LineStyle style = LineStyle::kSolid;
  bool markers = true;
  bool line = true;
};

}  // namespace

SvgChart::SvgChart(ChartOptions options) : options_(std::move(options)) {}

void SvgChart::add_series(ChartSeries series) {
  if (series.color_index < 0) series.color_index = static_cast<int>(series_.size());
  series_.push_back(std::move(series));
}
void SvgChart::add_threshold(ChartThreshold threshold) {
  thresholds_.push_back(std::move(threshold));
}
void SvgChart::add_mark(ChartMark mark) { marks_.push_back(std::move(mark)); }
void SvgChart::add_band(ChartBand band) { bands_.push_back(std::move(band)); }

const char* SvgChart::color(int index) {
  static constexpr const char* kPalette[kPaletteSize] = {
      "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
      "#332288", "#999933", "#882255", "#117733", "#000000", "#7F7F7F"};
  constexpr int n = kPaletteSize;
  return kPalette[((index % n) + n) % n];
}

bool SvgChart::empty() const {
  for (const auto& s : series_) {
    for (const auto& p : s.points) {
      if (std::isfinite(p.x) && std::isfinite(p.y) && (!options_.x.log || p.x > 0) &&
          (!options_.y.log || p.y > 0))
        return false;
    }
  }
  return true;
}

std::string SvgChart::render() const {
  std::vector<double> xs, ys;
  for (const auto& s : series_) {
    for (const auto& p : s.points) {
      if (!std::isfinite(p.y)) continue;
      xs.push_back(p.x);
      ys.push_back(p.y);
    }
  }
  for (const auto& m : marks_) {
    xs.push_back(m.x);
    ys.push_back(m.y);
  }
  for (const auto& t : thresholds_) ys.push_back(t.y);
  for (const auto& b : bands_) {
    xs.push_back(b.x0);
    xs.push_back(b.x1);
  }
  const Scale sx = make_scale(options_.x, xs);
  const Scale sy = make_scale(options_.y, ys);

  const double width = options_.width_px;
  const double plot_left = kMarginLeft;
  const double plot_right = width - kMarginRight;
  const double plot_top = kMarginTop;
  const double plot_bottom = plot_top + options_.plot_height_px;
  auto px = [&](double x) { return plot_left + sx.fraction(x) * (plot_right - plot_left); };
  auto py = [&](double y) { return plot_bottom - sy.fraction(y) * (plot_bottom - plot_top); };

  // Legend layout: rows that wrap at the plot width.
  std::vector<LegendItem> legend;
  for (const auto& s : series_) {
    if (!s.in_legend) continue;
    legend.push_back(
        {LegendItem::Kind::kSeries, s.name, s.color_index, s.style, s.markers, s.line});
  }
  for (const auto& m : marks_) {
    if (m.label.empty()) continue;
    const bool dup = std::any_of(legend.begin(), legend.end(), [&](const LegendItem& i) {
      return i.kind == LegendItem::Kind::kMark && i.text == m.label;
    });
    if (!dup) legend.push_back({LegendItem::Kind::kMark, m.label, m.color_index});
  }
  for (const auto& t : thresholds_) legend.push_back({LegendItem::Kind::kThreshold, t.label});
  struct Placed {
    const LegendItem* item;
    double x, row;
  };
  std::vector<Placed> placed;
  const double legend_left = 16;
  const double legend_right = width - 12;
  double lx = legend_left;
  int row = 0;
  for (const auto& item : legend) {
    const double w = 30 + text_width(item.text, kFontPx) + 18;
    if (lx > legend_left && lx + w > legend_right) {
      ++row;
      lx = legend_left;
    }
    placed.push_back({&item, lx, static_cast<double>(row)});
    lx += w;
  }
  const int legend_rows = legend.empty() ? 0 : row + 1;
  const double legend_top = plot_bottom + 60;
  const double height = legend_top + legend_rows * kLegendRow + 10;

  std::string svg;
  svg.reserve(8192);
  svg += "<svg class=\"chart\" data-chart=\"" + html_escape(options_.kind) + "\"";
  for (const auto& [k, v] : options_.attributes)
    svg += " " + html_escape(k) + "=\"" + html_escape(v) + "\"";
  svg += " xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" role=\"img\" font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu "
         "Sans', sans-serif\">";
  svg += "<title>" + html_escape(options_.title) + "</title>";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" fill=\"#ffffff\"/>";
  svg +=
      "<text class=\"chart-title\" x=\"" + num(width / 2) +
      "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"600\" fill=\"#1a1a1a\">" +
      html_escape(options_.title) + "</text>";

  // Bands behind everything else.
  for (const auto& b : bands_) {
    if (!sx.drawable(b.x0) || !sx.drawable(b.x1)) continue;
    const double x0 = px(std::min(b.x0, b.x1)), x1 = px(std::max(b.x0, b.x1));
    svg += "<g class=\"band\"><rect x=\"" + num(x0) + "\" y=\"" + num(plot_top) + "\" width=\"" +
           num(std::max(1.0, x1 - x0)) + "\" height=\"" + num(plot_bottom - plot_top) +
           "\" fill=\"#E69F00\" fill-opacity=\"0.16\"/>";
    if (!b.label.empty())
      svg += label_text((x0 + x1) / 2, plot_top + 14, b.label, "middle", "#8a5a00", 11.5,
                        "band-label");
    svg += "</g>";
  }

  // Grid, ticks and tick labels.
  svg += "<g class=\"axis y-axis\">";
  for (const double t : sy.ticks) {
    const double y = py(t);
    svg += "<line x1=\"" + num(plot_left) + "\" x2=\"" + num(plot_right) + "\" y1=\"" + num(y) +
           "\" y2=\"" + num(y) + "\" stroke=\"#e3e3e3\" stroke-width=\"1\"/>";
    svg += "<text class=\"tick-label\" x=\"" + num(plot_left - 7) + "\" y=\"" + num(y + 4) +
           "\" text-anchor=\"end\" font-size=\"" + num(kFontPx) + "\" fill=\"#333\">" +
           html_escape(format_compact(t)) + "</text>";
  }
  svg += "<text class=\"axis-title y-title\" transform=\"translate(18 " +
         num((plot_top + plot_bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\" fill=\"#1a1a1a\">" +
         html_escape(options_.y.title) + "</text></g>";
  svg += "<g class=\"axis x-axis\">";
  for (const double t : sx.ticks) {
    const double x = px(t);
    svg += "<line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(plot_top) + "\" y2=\"" +
           num(plot_bottom) + "\" stroke=\"#efefef\" stroke-width=\"1\"/>";
    svg += "<line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(plot_bottom) +
           "\" y2=\"" + num(plot_bottom + 5) + "\" stroke=\"#555\"/>";
    svg += "<text class=\"tick-label\" x=\"" + num(x) + "\" y=\"" + num(plot_bottom + 19) +
           "\" text-anchor=\"middle\" font-size=\"" + num(kFontPx) + "\" fill=\"#333\">" +
           html_escape(format_compact(t)) + "</text>";
  }
  svg += "<text class=\"axis-title x-title\" x=\"" + num((plot_left + plot_right) / 2) + "\" y=\"" +
         num(plot_bottom + 42) + "\" text-anchor=\"middle\" font-size=\"13\" fill=\"#1a1a1a\">" +
         html_escape(options_.x.title) + "</text></g>";
  svg += "<rect class=\"plot-frame\" x=\"" + num(plot_left) + "\" y=\"" + num(plot_top) +
         "\" width=\"" + num(plot_right - plot_left) + "\" height=\"" +
         num(plot_bottom - plot_top) + "\" fill=\"none\" stroke=\"#888\" stroke-width=\"1\"/>";

  if (empty()) {
    svg += "<text class=\"no-data\" x=\"" + num((plot_left + plot_right) / 2) + "\" y=\"" +
           num((plot_top + plot_bottom) / 2) +
           "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#777\">no data</text>";
  }

  // Thresholds (SLA bounds).
  for (const auto& t : thresholds_) {
    if (!sy.drawable(t.y)) continue;
    const double y = py(t.y);
    svg += "<g class=\"threshold-group\"><line class=\"threshold\" data-value=\"" +
           html_escape(format_compact(t.y)) + "\" x1=\"" + num(plot_left) + "\" x2=\"" +
           num(plot_right) + "\" y1=\"" + num(y) + "\" y2=\"" + num(y) + "\" stroke=\"" +
           kThresholdColor + "\" stroke-width=\"1.6\" stroke-dasharray=\"8 5\"/>";
    const bool below = y - plot_top < 16;
    // At the left end: load grows to the right, so the data is usually lower there.
    svg += label_text(plot_left + 6, below ? y + 15 : y - 5, t.label, "start", kThresholdColor,
                      11.5, "threshold-label");
    svg += "</g>";
  }

  // Series.
  for (const auto& s : series_) {
    const char* c = color(s.color_index);
    svg += "<g class=\"series\" data-series=\"" + html_escape(s.name) + "\">";
    if (s.line) {
      std::vector<std::string> runs;
      std::string cur;
      for (const auto& p : s.points) {
        if (!sx.drawable(p.x) || !sy.drawable(p.y)) {
          if (!cur.empty()) runs.push_back(std::move(cur));
          cur.clear();
          continue;
        }
        cur += num(px(p.x)) + "," + num(py(p.y)) + " ";
      }
      if (!cur.empty()) runs.push_back(std::move(cur));
      for (const auto& r : runs) {
        svg += "<polyline fill=\"none\" stroke=\"" + std::string(c) +
               "\" stroke-width=\"2.2\" stroke-linejoin=\"round\"" +
               dash_attr(s.style, s.color_index) + " points=\"" + r + "\"/>";
      }
    }
    if (s.markers) {
      for (const auto& p : s.points) {
        if (!sx.drawable(p.x) || !sy.drawable(p.y)) continue;
        svg += "<circle cx=\"" + num(px(p.x)) + "\" cy=\"" + num(py(p.y)) + "\" r=\"3.4\" fill=\"" +
               std::string(c) + "\"><title>" + html_escape(s.name) + ": " +
               html_escape(format_compact(p.x)) + ", " + html_escape(format_compact(p.y)) +
               "</title></circle>";
      }
    }
    svg += "</g>";
  }

  // Marked points on top.
  for (const auto& m : marks_) {
    if (!sx.drawable(m.x) || !sy.drawable(m.y)) continue;
    const double x = px(m.x), y = py(m.y);
    const char* c = color(m.color_index);
    svg += "<g class=\"mark " + html_escape(m.css_class) + "\" data-x=\"" +
           html_escape(format_compact(m.x)) + "\" data-y=\"" + html_escape(format_compact(m.y)) +
           "\"><circle cx=\"" + num(x) + "\" cy=\"" + num(y) +
           "\" r=\"8\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"2.6\"/>";
    svg += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"2.6\" fill=\"" + c + "\"/>";
    const std::string value = format_compact(m.y);
    const double w = text_width(value, 11.5);
    const bool left = x + 12 + w > plot_right;
    const bool low = y - plot_top < 18;
    svg += label_text(left ? x - 12 : x + 12, low ? y + 18 : y - 10, value, left ? "end" : "start",
                      c, 11.5, "mark-label");
    svg += "</g>";
  }

  // Legend.
  svg += "<g class=\"legend\">";
  for (const auto& p : placed) {
    const double y = legend_top + p.row * kLegendRow;
    const auto& item = *p.item;
    svg += "<g class=\"legend-item\">";
    if (item.kind == LegendItem::Kind::kThreshold) {
      svg += "<line x1=\"" + num(p.x) + "\" x2=\"" + num(p.x + 24) + "\" y1=\"" + num(y) +
             "\" y2=\"" + num(y) + "\" stroke=\"" + kThresholdColor +
             "\" stroke-width=\"1.6\" stroke-dasharray=\"8 5\"/>";
    } else if (item.kind == LegendItem::Kind::kMark) {
      svg += "<circle cx=\"" + num(p.x + 12) + "\" cy=\"" + num(y) +
             "\" r=\"6\" fill=\"none\" stroke=\"#333\" stroke-width=\"2.2\"/>";
    } else {
      const char* c = color(item.color_index);
      if (item.line)
        svg += "<line x1=\"" + num(p.x) + "\" x2=\"" + num(p.x + 24) + "\" y1=\"" + num(y) +
               "\" y2=\"" + num(y) + "\" stroke=\"" + c + "\" stroke-width=\"2.4\"" +
               dash_attr(item.style, item.color_index) + "/>";
      if (item.markers || !item.line)
        svg += "<circle cx=\"" + num(p.x + 12) + "\" cy=\"" + num(y) + "\" r=\"3.4\" fill=\"" + c +
               "\"/>";
    }
    svg += "<text x=\"" + num(p.x + 30) + "\" y=\"" + num(y + 4) + "\" font-size=\"" +
           num(kFontPx) + "\" fill=\"#1a1a1a\">" + html_escape(item.text) + "</text></g>";
  }
  svg += "</g></svg>";
  return svg;
}

}  // namespace llmcap::api
