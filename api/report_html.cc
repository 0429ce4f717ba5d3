#include "api/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "api/at_demand.h"
#include "api/prediction_check.h"
#include "api/report_format.h"
#include "api/report_tables.h"
#include "api/svg_chart.h"

namespace llmcap::api {

using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* kCss = R"css(
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f7f9; color: #1a1a1a;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 20px 18px 40px; }
header.report-header { background: #fff; border: 1px solid #dde1e6; border-radius: 8px;
  padding: 14px 18px; margin-bottom: 16px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 26px 0 10px; border-bottom: 2px solid #dde1e6; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 16px 0 8px; }
p.meta, p.caption { color: #4a4f57; margin: 4px 0; }
p.caption { font-size: 12.5px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
  font-weight: 600; margin-right: 6px; background: #e8eef7; color: #1f4e8c; border: 1px solid #c9d6ea; }
.badge.warn { background: #fff4e0; color: #8a5a00; border-color: #f0d39a; }
.table-wrap { overflow-x: auto; background: #fff; border: 1px solid #dde1e6; border-radius: 8px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 5px 7px; border-bottom: 1px solid #e6e9ed; text-align: right; vertical-align: top; }
td { white-space: nowrap; }
#capacity-table th, #capacity-table td { padding: 5px 5px; }
th { background: #eef1f5; font-weight: 600; vertical-align: bottom; }
td.labels { white-space: normal; text-align: left; min-width: 140px; }
td.labels .badge { margin: 1px 3px 1px 0; padding: 0 6px; font-size: 11px; white-space: nowrap; }
td.text, th.text { text-align: left; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.reasons { text-align: left; min-width: 180px; white-space: normal; overflow-wrap: anywhere;
  font-size: 12px; color: #333; }
td.step, td.wrap { white-space: normal; }
td.step { min-width: 64px; }
td.phase { white-space: normal; overflow-wrap: anywhere; min-width: 64px; }
td.verdict { white-space: normal; }
.outcome-pass, .verdict-qualified { color: #0b6e2e; font-weight: 600; }
.outcome-fail, .verdict-none { color: #b3261e; font-weight: 600; }
.outcome-inconclusive { color: #8a5a00; font-weight: 600; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr)); gap: 14px; }
figure { margin: 0; background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 8px; }
figure svg.chart { display: block; width: 100%; height: auto; }
figcaption { font-size: 12.5px; color: #4a4f57; padding: 4px 6px 2px; }
dl.record { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0;
  background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 10px 14px; }
dl.record dt { font-weight: 600; color: #333; }
dl.record dd { margin: 0; word-break: break-word; }
pre#plan-json { background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 12px;
  overflow-x: auto; font-size: 12px; }
details > summary { cursor: pointer; font-weight: 600; margin: 8px 0; }
@media (max-width: 1000px) {
  main { padding: 12px 8px 30px; }
  .charts { grid-template-columns: 1fr; }
  table { font-size: 12px; }
  td { white-space: normal; }
  th, td, #capacity-table th, #capacity-table td { padding: 4px 4px; }
  td.labels { min-width: 120px; }
  td.reasons { min-width: 150px; }
}
)css";

std::string esc(std::string_view s) { return html_escape(s); }

std::string td(std::string_view text, std::string_view cls = "") {
  return cls.empty() ? "<td>" + esc(text) + "</td>"
                     : "<td class=\"" + std::string(cls) + "\">" + esc(text) + "</td>";
}

std::string goodput_cell(const std::optional<double>& goodput_rps,
                         const std::optional<double>& sla_attainment) {
  if (!goodput_rps) return td("-");
  std::string text = format_fixed(*goodput_rps, 2);
  if (sla_attainment) text += " (" + format_fixed(*sla_attainment * 100, 0) + "%)";
  return td(text, "wrap");
}

std::string triple(const std::optional<double>& a, const std::optional<double>& b,
                   const std::optional<double>& c, int decimals) {
  return opt_fixed(a, decimals) + " / " + opt_fixed(b, decimals) + " / " + opt_fixed(c, decimals);
}

// `align`: one 'l' (text) or 'r' (number) per column; missing letters mean 'r'.
std::string th_row(const std::vector<std::string>& cells, std::string_view align) {
  std::string out = "<thead><tr>";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    out += i < align.size() && align[i] == 'l' ? "<th class=\"text\">" : "<th>";
    out += esc(cells[i]);
    out += "</th>";
  }
  return out + "</tr></thead>";
}

// A step of a target, flattened with what the charts need.
struct StepRef {
  const json* step;
  const json* phase;
  int target_index;
};

std::vector<StepRef> steps_of_kind(const json& target, int target_index,
                                   std::initializer_list<std::string_view> kinds) {
  std::vector<StepRef> out;
  const auto& phases = json_member(target, "phases");
  if (!phases.is_array()) return out;
  for (const auto& p : phases) {
    const auto kind = json_string(p, "kind");
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    const auto& steps = json_member(p, "steps");
    if (!steps.is_array()) continue;
    for (const auto& s : steps) out.push_back({&s, &p, target_index});
  }
  return out;
}

// SLA bounds of the plan: metric ("ttft_ms") → [(percentile key "p95", label "P95", limit)].
struct SlaBound {
  std::string key;    // "p95", "p99_9"
  std::string label;  // "P95"
  double limit_ms;
};

std::vector<SlaBound> sla_bounds(const json& results, std::string_view metric) {
  std::vector<SlaBound> out;
  const auto& b = json_member(json_member(json_member(results, "plan_document"), "sla"), metric);
  if (!b.is_object()) return out;
  for (const auto& [k, v] : b.items()) {
    if (!v.is_number()) continue;
    std::string label = k;
    for (auto& c : label)
      c = c == '_' ? '.' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out.push_back({k, label, v.get<double>()});
  }
  return out;
}

bool wide_range(const std::vector<double>& values, double ratio) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const double v : values) {
    if (!(v > 0) || !std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return hi > 0 && std::isfinite(lo) && hi / lo >= ratio;
}

std::string figure(const SvgChart& chart, std::string_view caption) {
  return "<figure>" + chart.render() + "<figcaption>" + esc(caption) + "</figcaption></figure>";
}

double x_of(const json& step, bool concurrency) {
  const auto& params = json_member(step, "params");
  return json_number(params, concurrency ? "concurrency" : "rate_rps").value_or(kNaN);
}

std::vector<ChartPoint> sorted(std::vector<ChartPoint> pts) {
  std::stable_sort(pts.begin(), pts.end(),
                   [](const ChartPoint& a, const ChartPoint& b) { return a.x < b.x; });
  return pts;
}

// One target's steps on one load axis, split so that its line never joins two steps run at the
// same load (a search trial and its confirm, a soak at a searched rate) with a vertical stroke:
// per load, the step with the longest window (the confirm or soak; the later one on a tie) is
// on the line, the others are dots of the same colour.
struct LoadSplit {
  std::vector<const json*> line;   // one step per load
  std::vector<const json*> extra;  // the other steps at a load already on the line
};

LoadSplit split_by_load(const std::vector<StepRef>& refs, bool concurrency) {
  std::map<long long, const json*> best;  // load (to 1e-6) → step on the line
  LoadSplit out;
  for (const auto& ref : refs) {
    const double x = x_of(*ref.step, concurrency);
    if (!std::isfinite(x)) {
      out.extra.push_back(ref.step);
      continue;
    }
    const json*& b = best[std::llround(x * 1e6)];
    const auto window = [](const json* step) {
      return json_number(json_member(*step, "stats"), "window_s").value_or(0);
    };
    if (b && window(ref.step) < window(b)) {
      out.extra.push_back(ref.step);
      continue;
    }
    if (b) out.extra.push_back(b);
    b = ref.step;
  }
  for (const auto& [x, step] : best) out.line.push_back(step);
  return out;
}

// The line series and the dots-only series (not in the legend) of one target's steps.
void add_load_series(SvgChart& chart, const LoadSplit& split, ChartSeries line, bool concurrency,
                     const std::function<double(const json&)>& y_of) {
  ChartSeries dots = line;
  dots.line = false;
  dots.markers = true;
  dots.in_legend = false;
  for (const json* step : split.line)
    line.points.push_back({x_of(*step, concurrency), y_of(*step)});
  for (const json* step : split.extra)
    dots.points.push_back({x_of(*step, concurrency), y_of(*step)});
  line.points = sorted(std::move(line.points));
  const bool with_dots = line.markers && !dots.points.empty();
  chart.add_series(std::move(line));
  if (with_dots) chart.add_series(std::move(dots));
}

// Throughput and latency-vs-load charts for one load axis (concurrency or offered rate).
std::vector<std::string> load_charts(const json& results, bool concurrency) {
  const auto& targets = targets_of(results);
  const std::initializer_list<std::string_view> kinds_conc = {"concurrency_sweep"};
  // Soak steps run at one offered rate too (often the qualified one), so they belong here.
  const std::initializer_list<std::string_view> kinds_rate = {"rate_sweep", "capacity_search",
                                                              "soak"};
  std::vector<std::vector<StepRef>> per_target;
  std::vector<double> all_x;
  bool any = false;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    per_target.push_back(
        steps_of_kind(targets[i], static_cast<int>(i), concurrency ? kinds_conc : kinds_rate));
    for (const auto& s : per_target.back()) all_x.push_back(x_of(*s.step, concurrency));
    any = any || !per_target.back().empty();
  }
  if (!any) return {};
  const std::string axis = concurrency ? "concurrency" : "rate";
  const std::string x_title =
      concurrency ? "Concurrency (requests in flight)" : "Offered rate (requests/s)";
  const bool log_x = concurrency && wide_range(all_x, 8);
  std::vector<std::string> out;

  {
    ChartOptions o;
    o.kind = "throughput-vs-" + axis;
    o.title =
        concurrency ? "Output throughput vs concurrency" : "Output throughput vs offered rate";
    o.x = {x_title, log_x, !log_x, std::nullopt, std::nullopt};
    o.y = {"Output throughput (tokens/s)", false, true, std::nullopt, std::nullopt};
    SvgChart chart(o);
    for (std::size_t i = 0; i < targets.size(); ++i) {
      ChartSeries s;
      s.name = json_string(targets[i], "name");
      s.color_index = static_cast<int>(i);
      add_load_series(
          chart, split_by_load(per_target[i], concurrency), std::move(s), concurrency,
          [](const json& step) {
            return json_number(json_member(step, "stats"), "output_tokens_per_s").value_or(kNaN);
          });
      const auto& q = json_member(targets[i], "qualified");
      const bool basis_matches =
          json_string(q, "basis") == (concurrency ? "closed_loop" : "open_loop");
      if (q.is_object() && basis_matches) {
        const auto x = json_number(q, concurrency ? "concurrency" : "offered_rate_rps");
        const auto y = json_number(q, "output_tokens_per_s");
        if (x && y)
          chart.add_mark({*x, *y, "SLA-qualified point", static_cast<int>(i), "qualified-point"});
      }
    }
    out.push_back(figure(
        chart,
        std::string("One line per target; the ring marks the SLA-qualified point (") +
            (concurrency ? "highest passing concurrency level" : "highest passing offered rate") +
            ") when the target qualified on this load model." +
            (concurrency ? ""
                         : " Where several steps ran at one rate (a search trial and its "
                           "confirm, a soak), the line goes through the longest and the others "
                           "are dots.")));
  }

  for (const std::string metric : {"ttft", "tpot"}) {
    const std::string key = metric + "_ms";
    const std::string upper = metric == "ttft" ? "TTFT" : "TPOT";
    ChartOptions o;
    o.kind = metric + "-vs-" + axis;
    o.title = "P50 / P95 / P99 " + upper + " vs " + (concurrency ? "concurrency" : "offered rate");
    std::vector<double> ys;
    for (const auto& pt : per_target) {
      for (const auto& ref : pt) {
        const auto& m = json_member(json_member(*ref.step, "stats"), key);
        for (const char* p : {"p50", "p95", "p99"}) ys.push_back(json_number(m, p).value_or(kNaN));
      }
    }
    const auto bounds = sla_bounds(results, key);
    for (const auto& b : bounds) ys.push_back(b.limit_ms);
    const bool log_y = wide_range(ys, 25);
    o.x = {x_title, log_x, !log_x, std::nullopt, std::nullopt};
    o.y = {upper + " (ms)" + (log_y ? ", log scale" : ""), log_y, !log_y, std::nullopt,
           std::nullopt};
    SvgChart chart(o);
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const auto name = json_string(targets[i], "name");
      const std::pair<const char*, LineStyle> pcts[] = {
          {"p50", LineStyle::kDotted}, {"p95", LineStyle::kSolid}, {"p99", LineStyle::kDashed}};
      for (const auto& [p, style] : pcts) {
        ChartSeries s;
        s.name = name + " " +
                 (std::string(p) == "p50"   ? "P50"
                  : std::string(p) == "p95" ? "P95"
                                            : "P99");
        s.color_index = static_cast<int>(i);
        s.style = style;
        s.markers = std::string(p) == "p95";
        const std::string pct = p;
        add_load_series(
            chart, split_by_load(per_target[i], concurrency), std::move(s), concurrency,
            [&](const json& step) {
              return json_number(json_member(json_member(step, "stats"), key), pct).value_or(kNaN);
            });
      }
    }
    for (const auto& b : bounds)
      chart.add_threshold({b.limit_ms, "SLA " + b.label + " " + upper + " ≤ " +
                                           format_compact(b.limit_ms) + " ms"});
    const std::string bounds_text =
        bounds.empty() ? (json_member(results, "plan_document").is_object()
                              ? " The plan sets no " + upper + " bound."
                              : " The plan is not in this document, so its SLA bounds are not "
                                "drawn.")
                       : " Dashed red lines are the plan's SLA bounds.";
    out.push_back(figure(
        chart, upper + " percentiles per step (dotted P50, solid P95, dashed P99)." + bounds_text +
                   std::string(
                       metric == "ttft"
                           ? " TTFT is measured from the intended send time (docs/metrics.md §1.4) "
                             "unless the "
                             "plan says otherwise."
                           : " TPOT is per request: (last − first token) / (output tokens − 1).")));
  }
  return out;
}

// Plan phase document by name (for burst timings).
const json& plan_phase(const json& results, std::string_view name) {
  static const json kNull = nullptr;
  const auto& phases = json_member(json_member(results, "plan_document"), "phases");
  if (!phases.is_array()) return kNull;
  for (const auto& p : phases) {
    if (json_string(p, "name", json_string(p, "kind")) == name) return p;
  }
  return kNull;
}

std::string burst_section(const json& results) {
  const auto& targets = targets_of(results);
  // Burst phases by (name, repeat), in order of first appearance.
  std::vector<std::pair<std::string, int>> keys;
  for (const auto& t : targets) {
    const auto& phases = json_member(t, "phases");
    if (!phases.is_array()) continue;
    for (const auto& p : phases) {
      if (!json_member(p, "burst").is_object()) continue;
      std::pair<std::string, int> k{json_string(p, "name"),
                                    static_cast<int>(json_number(p, "repeat").value_or(0))};
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
  }
  if (keys.empty()) return "";
  std::string out = "<section id=\"bursts\"><h2>Burst recovery</h2>";
  std::string rows;
  const auto ttft_bounds = sla_bounds(results, "ttft_ms");
  for (const auto& [name, repeat] : keys) {
    const auto& pp = plan_phase(results, name);
    const auto warmup = json_number(pp, "warmup_s");
    const auto window = json_number(pp, "window_s");
    const auto burst_s = json_number(pp, "burst_s");
    std::optional<ChartBand> band;
    if (warmup && window && burst_s) {
      const double start = *warmup + *window;
      band = ChartBand{start, start + *burst_s,
                       "burst ×" + format_compact(json_number(pp, "multiplier").value_or(0))};
    }
    const std::string title_suffix =
        name + (repeat > 0 ? " (repeat " + std::to_string(repeat + 1) + ")" : "");
    ChartOptions to;
    to.kind = "burst-ttft";
    to.title = "Windowed P95 TTFT during " + title_suffix;
    to.x = {"Time since load start (s)", false, true, std::nullopt, std::nullopt};
    to.y = {"P95 TTFT per window (ms)", false, true, std::nullopt, std::nullopt};
    to.attributes = {{"data-phase", name}};
    ChartOptions io = to;
    io.kind = "burst-in-flight";
    io.title = "Requests in flight during " + title_suffix;
    io.y = {"In flight (requests)", false, true, std::nullopt, std::nullopt};
    SvgChart ttft(to), inflight(io);
    if (band) {
      ttft.add_band(*band);
      inflight.add_band(*band);
    }
    for (const auto& b : ttft_bounds) {
      if (b.key == "p95")
        ttft.add_threshold({b.limit_ms, "SLA P95 TTFT ≤ " + format_compact(b.limit_ms) + " ms"});
    }
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const auto& phases = json_member(targets[i], "phases");
      if (!phases.is_array()) continue;
      for (const auto& p : phases) {
        const auto& b = json_member(p, "burst");
        if (!b.is_object() || json_string(p, "name") != name ||
            static_cast<int>(json_number(p, "repeat").value_or(0)) != repeat)
          continue;
        const auto tname = json_string(targets[i], "name");
        ChartSeries ts{tname, {}, static_cast<int>(i), LineStyle::kSolid, true, true};
        const auto& tl = json_member(b, "timeline");
        if (tl.is_array()) {
          for (const auto& w : tl)
            ts.points.push_back({json_number(w, "t_s").value_or(kNaN),
                                 json_number(w, "p95_ttft_ms").value_or(kNaN)});
        }
        ChartSeries is{tname, {}, static_cast<int>(i), LineStyle::kSolid, false, true};
        const auto& inf = json_member(b, "in_flight");
        if (inf.is_array()) {
          for (const auto& w : inf)
            is.points.push_back({json_number(w, "t_ns").value_or(kNaN) / 1e9,
                                 json_number(w, "in_flight").value_or(kNaN)});
        }
        ttft.add_series(std::move(ts));
        inflight.add_series(std::move(is));
        auto secs = [&](const char* k) {
          const auto v = json_number(b, k);
          return v ? format_fixed(*v, 1) + " s" : std::string("never");
        };
        const bool recovered =
            json_member(b, "recovered").is_boolean() && b["recovered"].get<bool>();
        rows += "<tr data-target=\"" + esc(tname) + "\">" + td(tname, "text") +
                td(title_suffix, "text") + "<td class=\"" +
                std::string(recovered ? "outcome-pass" : "outcome-fail") + "\">" +
                (recovered ? "recovered" : "did not recover") + "</td>" +
                td(secs("latency_recovered_s")) + td(secs("backlog_drained_s")) +
                td(secs("recovery_s")) + td(opt_fixed(json_number(b, "pre_burst_in_flight"), 0)) +
                td(opt_fixed(json_number(b, "peak_in_flight"), 0)) + "</tr>";
      }
    }
    out += "<div class=\"charts\">" +
           figure(ttft,
                  "P95 TTFT over sliding windows of the burst step (gaps: windows without "
                  "completions); the shaded band is the burst.") +
           figure(inflight,
                  "Requests in flight (sampled every 0.5 s); a backlog that does not return to its "
                  "pre-burst level has not drained.") +
           "</div>";
  }
  out += "<h3>Recovery</h3><div class=\"table-wrap\"><table id=\"burst-table\">" +
         th_row({"Target", "Phase", "Outcome", "P95 TTFT back under bound after",
                 "Backlog drained after", "Recovered after", "In flight before", "Peak in flight"},
                "lll") +
         "<tbody>" + rows + "</tbody></table></div>";
  out +=
      "<p class=\"caption\">Times are measured from the end of the burst; \"never\" means not "
      "within the observation window.</p></section>";
  return out;
}

std::string soak_section(const json& results) {
  std::string rows;
  for (const auto& t : targets_of(results)) {
    const auto& phases = json_member(t, "phases");
    if (!phases.is_array()) continue;
    for (const auto& p : phases) {
      const auto& s = json_member(p, "soak");
      if (!s.is_object()) continue;
      const auto tname = json_string(t, "name");
      if (json_member(s, "skipped").is_boolean() && s["skipped"].get<bool>()) {
        rows += "<tr data-target=\"" + esc(tname) + "\">" + td(tname, "text") +
                td(json_string(p, "name"), "text") +
                "<td class=\"reasons\" colspan=\"5\">skipped: " + esc(json_string(s, "statement")) +
                "</td></tr>";
        continue;
      }
      std::string bounds;
      const auto& bl = json_member(s, "bounds");
      if (bl.is_array()) {
        for (const auto& b : bl) {
          if (!bounds.empty()) bounds += "; ";
          bounds += json_string(b, "metric") + " P" +
                    format_compact(json_number(b, "percentile").value_or(0)) + " ≤ " +
                    format_compact(json_number(b, "limit_ms").value_or(0)) + " ms held in " +
                    percent(json_number(b, "share_held")) + " of windows";
        }
      }
      rows += "<tr data-target=\"" + esc(tname) + "\">" + td(tname, "text") +
              td(json_string(p, "name"), "text") + td(opt_fixed(json_number(s, "rate_rps"), 2)) +
              td(opt_fixed(json_number(s, "windows"), 0) + " × " +
                 opt_fixed(json_number(s, "window_s"), 0) + " s") +
              td(percent(json_number(s, "all_held_share"))) +
              td(percent(json_number(s, "error_rate_share_held"))) + td(bounds, "reasons") +
              "</tr>";
    }
  }
  if (rows.empty()) return "";
  return "<section id=\"soak\"><h2>Soak</h2><div class=\"table-wrap\"><table id=\"soak-table\">" +
         th_row({"Target", "Phase", "Rate (rps)", "Windows", "Windows with every bound held",
                 "Windows with error rate held", "Per bound"},
                "llrrrrl") +
         "<tbody>" + rows + "</tbody></table></div></section>";
}

std::string cdf_section(const json& results) {
  std::string out;
  const auto& targets = targets_of(results);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto tname = json_string(targets[i], "name");
    const auto& phases = json_member(targets[i], "phases");
    if (!phases.is_array()) continue;
    std::string figures;
    for (const auto& p : phases) {
      const auto& steps = json_member(p, "steps");
      if (!steps.is_array() || steps.empty()) continue;
      const auto pname = json_string(p, "name", json_string(p, "kind"));
      for (const std::string metric : {"ttft", "tpot"}) {
        const std::string key = metric + "_ms";
        const std::string upper = metric == "ttft" ? "TTFT" : "TPOT";
        std::vector<double> xs;
        for (const auto& s : steps) {
          const auto& m = json_member(json_member(s, "stats"), key);
          for (const char* k : {"min", "max"}) xs.push_back(json_number(m, k).value_or(kNaN));
        }
        const bool log_x = wide_range(xs, 20);
        ChartOptions o;
        o.kind = "cdf-" + metric;
        o.title = upper + " distribution: " + tname + ", " + pname;
        o.x = {upper + " (ms)" + (log_x ? ", log scale" : ""), log_x, false, std::nullopt,
               std::nullopt};
        o.y = {"Requests at or below (%)", false, true, 0.0, 100.0};
        o.plot_height_px = 240;
        o.attributes = {{"data-target", tname}, {"data-phase", pname}};
        SvgChart chart(o);
        int color = 0;
        for (const auto& s : steps) {
          const auto& m = json_member(json_member(s, "stats"), key);
          ChartSeries series;
          series.name = json_string(s, "label", "step");
          series.color_index = color++;
          const std::pair<const char*, double> pts[] = {{"min", 0},  {"p50", 50}, {"p90", 90},
                                                        {"p95", 95}, {"p99", 99}, {"p99_9", 99.9},
                                                        {"max", 100}};
          for (const auto& [k, y] : pts) {
            const auto x = json_number(m, k);
            if (x) series.points.push_back({*x, y});
          }
          chart.add_series(std::move(series));
        }
        for (const auto& b : sla_bounds(results, key)) {
          (void)b;  // bounds are on the x axis here; the verdict table states them
        }
        figures += figure(chart,
                          "Approximate CDF per step from the summary points min, P50, P90, P95, "
                          "P99, P99.9 and max "
                          "(straight lines between them), not from every request.");
      }
    }
    if (!figures.empty()) {
      out += "<h3>" + esc(tname) + "</h3><div class=\"charts\">" + figures + "</div>";
    }
  }
  if (out.empty()) return "";
  return "<section id=\"cdfs\"><h2>Latency distributions per step</h2>" + out + "</section>";
}

std::string capacity_table(const json& results) {
  const auto rows = capacity_rows(results);
  const bool any_memory = std::any_of(rows.begin(), rows.end(), [](const CapacityRow& r) {
    return r.memory_headroom_gb.has_value();
  });
  std::vector<std::string> head = {"Target",
                                   "Model",
                                   "Precision",
                                   "In / out tokens",
                                   "Load",
                                   "Sustained (req/s)",
                                   "Goodput req/s (met SLO)",
                                   "Output tok/s",
                                   "P95 TTFT (ms)",
                                   "P95 TPOT (ms)",
                                   "P95 E2E (ms)",
                                   "Error rate"};
  if (any_memory) head.push_back("Memory headroom (GB)");
  for (const char* h : {"Price per hour", "Cost per M output tokens", "Verdict", "Labels"})
    head.push_back(h);
  std::string align = "lllrrrrrrrrr";
  if (any_memory) align += 'r';
  align += "rrll";
  std::string out =
      "<div class=\"table-wrap\"><table id=\"capacity-table\">" + th_row(head, align) + "<tbody>";
  std::string workload_shown;
  for (const auto& r : rows) {
    if (!r.workload.empty() && r.workload != workload_shown) {
      // A workload matrix: the rows of each workload under its own heading row.
      workload_shown = r.workload;
      out += "<tr class=\"workload-group\"><th colspan=\"" + std::to_string(head.size()) +
             "\" class=\"text\">Workload " + esc(r.workload) + " (" + lengths_text(r) +
             " tokens)</th></tr>";
    }
    out += "<tr data-target=\"" + esc(r.target) + "\">" + td(r.target, "text") +
           td(r.model, "text") + td(r.precision, "text") + td(lengths_text(r)) +
           td(load_text(r), "wrap") + td(opt_fixed(r.requests_per_s, 2)) +
           goodput_cell(r.goodput_rps, r.sla_attainment) + td(opt_fixed(r.output_tokens_per_s, 1)) +
           td(opt_fixed(r.ttft_p95_ms, 0)) + td(opt_fixed(r.tpot_p95_ms, 1)) +
           td(opt_fixed(r.e2e_p95_ms, 0)) + td(percent(r.error_rate));
    if (any_memory) out += td(opt_fixed(r.memory_headroom_gb, 1));
    out += td(r.price_per_hour ? format_fixed(*r.price_per_hour, 2) + " " + r.currency : "-");
    out += td(r.cost_per_million_output_tokens
                  ? format_fixed(*r.cost_per_million_output_tokens, 4) + " " + r.currency
                  : "-");
    out += "<td class=\"text " + std::string(r.qualified ? "verdict-qualified" : "verdict-none") +
           "\"" + (r.statement.empty() ? "" : " title=\"" + esc(r.statement) + "\"") + ">" +
           esc(r.verdict) + "</td>";
    std::string labels;
    for (const auto& l : r.labels) {
      const bool warn = l == "client-bound steps present" || l == "non-monotonic" ||
                        l == "per-target optimised" || l == "insufficient-samples";
      labels +=
          "<span class=\"badge" + std::string(warn ? " warn" : "") + "\">" + esc(l) + "</span>";
    }
    out += "<td class=\"labels\">" + labels + "</td></tr>";
  }
  out += "</tbody></table></div>";
  out +=
      "<p class=\"caption\">Qualified capacity = the highest load whose step passed every SLA "
      "bound (docs/metrics.md §5.1), "
      "at the open-loop (offered rate) point when one exists, otherwise the closed-loop "
      "(concurrency) point. "
      "Goodput: requests per second at that point that met every SLO, with their share of the "
      "requests intended (docs/metrics.md §3.3). "
      "Cost per million output tokens = price per hour / (qualified output tokens/s × 3600) × 10⁶, "
      "never at the peak.</p>";
  return out;
}

// One prediction check's table: each target's figures, predicted and measured, and the error.
std::string prediction_check_table(const json& check) {
  std::string out =
      "<div class=\"table-wrap\"><table class=\"prediction-check-table\" "
      "data-predicted-job=\"" +
      esc(json_string(check, "predicted_job")) + "\" data-measured-job=\"" +
      esc(json_string(check, "measured_job")) +
      "\"><thead><tr><th>Target</th><th>Figure</th><th>Predicted</th><th>Measured</th>"
      "<th>Error</th></tr></thead><tbody>";
  const auto& targets = json_member(check, "targets");
  for (const auto& t : targets.is_array() ? targets : json::array()) {
    const auto& p = json_member(t, "predicted");
    const auto& m = json_member(t, "measured");
    const auto& e = json_member(t, "relative_error");
    bool first = true;
    for (const auto& row : {std::tuple{"qualified_rps", "Qualified rate (req/s)", 2},
                            std::tuple{"output_tokens_per_s", "Output tok/s", 1},
                            std::tuple{"ttft_p95_ms", "P95 TTFT (ms)", 0},
                            std::tuple{"tpot_p95_ms", "P95 TPOT (ms)", 1},
                            std::tuple{"e2e_p95_ms", "P95 E2E (ms)", 0}}) {
      // Named copies, not a structured binding: clang < 16 cannot capture bindings in lambdas.
      const char* const key = std::get<0>(row);
      const char* const name = std::get<1>(row);
      const int decimals = std::get<2>(row);
      auto cell = [&](const json& side) {
        const auto v = json_number(side, key);
        return v ? format_fixed(*v, decimals) : json_string(side, "outcome", "-");
      };
      const auto err = json_number(e, key);
      const std::string pct = err ? signed_percent(*err) : "-";
      out += "<tr>" + td(first ? json_string(t, "target") : std::string(), "text") +
             td(name, "text") + td(cell(p)) + td(cell(m)) + td(pct) + "</tr>";
      first = false;
    }
  }
  return out + "</tbody></table></div>";
}

// A prediction beside a measurement: the one a job's own report found (same workload and SLA,
// `prediction_check`), or those of a comparison of a prediction with a measurement
// (`prediction_checks`, api/report_compare.h).
std::string prediction_check_section(const json& results) {
  const auto& check = json_member(results, "prediction_check");
  const auto& targets = json_member(check, "targets");
  const auto& checks = json_member(results, "prediction_checks");
  std::string out;
  if (targets.is_array() && !targets.empty()) {
    out =
        "<section id=\"prediction-check\"><h2>Prediction vs measurement</h2><p "
        "class=\"caption\">Predicted job " +
        esc(json_string(check, "predicted_job")) + ", measured job " +
        esc(json_string(check, "measured_job")) +
        " (same workload fingerprint and SLA), at each target's qualified point. Error = "
        "(measured − predicted) / predicted.</p>" +
        prediction_check_table(check);
  } else if (checks.is_array() && !checks.empty()) {
    out =
        "<section id=\"prediction-check\"><h2>Predicted vs measured</h2><p class=\"caption\">"
        "Each target of the prediction beside its counterpart in the measurement (paired by "
        "name, else base_url), at each target's qualified point; error = (measured − predicted) "
        "/ predicted. A prediction is checked against a measurement, never ranked with it.</p>";
    for (const auto& c : checks) {
      out += "<p class=\"meta\"><span class=\"badge warn\">predicted</span> Job " +
             esc(json_string(c, "predicted_label")) + " " + esc(json_string(c, "predicted_job")) +
             " (plan " + esc(json_string(c, "predicted_plan")) +
             ") vs <span class=\"badge\">measured</span> job " +
             esc(json_string(c, "measured_label")) + " " + esc(json_string(c, "measured_job")) +
             " (plan " + esc(json_string(c, "measured_plan")) + ")";
      if (json_member(c, "slas_differ") == json(true))
        out += "; <span class=\"badge warn\">different SLAs</span>";
      out += ".</p>";
      const auto& t = json_member(c, "targets");
      out += t.is_array() && !t.empty()
                 ? prediction_check_table(c)
                 : "<p class=\"meta\">No target of one job pairs with a target of the other "
                   "(by name or base_url).</p>";
    }
  } else {
    return "";
  }
  return out + "</section>";
}

std::string comparison_section(const json& results) {
  const auto& comparison = json_member(results, "comparison");
  // A prediction beside a measurement with no two jobs of one kind: no A/B to show (the
  // prediction check is the comparison).
  if (json_string(results, "comparison_mode") == "predicted vs measured" &&
      !results.contains("comparison_basis"))
    return "";
  const auto label = json_string(results, "comparison_label", "same-config");
  std::string out =
      "<section id=\"comparison\"><h2>Comparison</h2><p class=\"meta\">Comparison kind: <span "
      "class=\"badge" +
      std::string(label == "same-config" ? "" : " warn") + "\">" + esc(label) + "</span></p>";
  if (!comparison.is_array() || comparison.empty()) {
    return out +
           "<p class=\"meta\">No comparison: it needs at least two targets with qualified "
           "capacity.</p></section>";
  }
  out +=
      "<div class=\"table-wrap\"><table id=\"comparison-table\">" +
      th_row({"Target", "Baseline", "Throughput ratio", "Price ratio", "Relative cost per token"},
             "ll") +
      "<tbody>";
  for (const auto& c : comparison) {
    out += "<tr data-target=\"" + esc(json_string(c, "target")) + "\">" +
           td(json_string(c, "target"), "text") + td(json_string(c, "baseline"), "text") +
           td("×" + opt_fixed(json_number(c, "throughput_ratio"), 2)) +
           td("×" + opt_fixed(json_number(c, "price_ratio"), 2)) +
           td("×" + opt_fixed(json_number(c, "relative_cost_per_token"), 2)) + "</tr>";
  }
  out +=
      "</tbody></table></div><p class=\"caption\">Relative cost per token = price ratio / "
      "throughput ratio at the qualified "
      "points (docs/metrics.md §6.2); below ×1.00 the target is cheaper per output token than the "
      "baseline.";
  const auto basis = json_string(results, "comparison_basis");
  if (basis == "same-name targets")
    out +=
        " Each target is compared with the target of the same name in the first job that has "
        "it, among jobs of its kind (measured with measured, predicted with predicted).";
  else if (basis == "first target")
    out +=
        " No target name recurs across the jobs, so each is compared with the first job's "
        "first target of its kind.";
  return out + "</p></section>";
}

// One demand plan's table; `id` names the table.
std::string demand_table(const json& d, const std::string& id) {
  std::string out = "<p class=\"meta\">Demand " +
                    esc(opt_fixed(json_number(d, "demand_output_tokens_per_s"), 0)) +
                    " output tokens/s; with headroom " +
                    esc(opt_fixed(json_number(d, "required_output_tokens_per_s"), 0)) +
                    " tokens/s; " + esc(opt_fixed(json_number(d, "hours_per_month"), 0)) +
                    " hours per month.</p>";
  out += "<div class=\"table-wrap\"><table id=\"" + esc(id) + "\" class=\"demand-table\">" +
         th_row({"Target", "Instances", "Hourly cost", "Monthly cost", "Utilisation",
                 "Cost per M output tokens", "Note"},
                "lrrrrrl") +
         "<tbody>";
  for (const auto& r : demand_plan_rows(d)) {
    out += "<tr data-target=\"" + esc(r.target) + "\">" + td(r.target, "text");
    if (r.feasible) {
      out += td(r.instances ? std::to_string(*r.instances) : "-") +
             td(opt_fixed(r.hourly_cost, 2)) + td(opt_fixed(r.monthly_cost, 2)) +
             td(percent(r.utilisation)) + td(opt_fixed(r.cost_per_million_output_tokens, 4)) +
             td(r.cheapest ? "cheapest" : "", "text");
    } else {
      out += td("-") + td("-") + td("-") + td("-") + td("-") +
             td("not feasible (no qualified capacity)", "text");
    }
    out += "</tr>";
  }
  return out + "</tbody></table></div>";
}

std::string demand_section(const json& results) {
  const auto& d = json_member(results, "demand_plan");
  const auto& per_job = json_member(results, "demand_plans");
  std::string out = "<section id=\"demand\"><h2>Demand plan</h2>";
  if (d.is_object()) {
    out += demand_table(d, "demand-table");
  } else if (per_job.is_array() && !per_job.empty()) {
    // A comparison whose jobs cannot share one table (api/report_compare.h): one per job,
    // "cheapest" among that job's targets only.
    out += "<p class=\"meta\" id=\"demand-per-job\">One table per job: " +
           esc(json_string(results, "demand_per_job_reason")) +
           ", so their instances and costs are not ranked together.</p>";
    for (const auto& p : per_job) {
      const auto kind = json_string(p, "kind", "measured");
      out += "<h3>Job " + esc(json_string(p, "label")) + " <span class=\"badge" +
             std::string(kind == "predicted" ? " warn" : "") + "\">" + esc(kind) + "</span> " +
             esc(json_string(p, "job_id")) + "</h3>" +
             demand_table(json_member(p, "demand_plan"), "demand-table-" + json_string(p, "label"));
    }
  } else {
    return "";
  }
  return out +
         "<p class=\"caption\">Instances = ceil(required tokens/s / "
         "qualified tokens/s per instance).</p></section>";
}

// The equal-load comparison (api/at_demand.h): every target at the at_demand phase's rate.
std::string at_demand_section(const json& results) {
  const auto tables = at_demand_tables(results);
  if (tables.empty()) return "";
  std::string out = "<section id=\"at-demand\"><h2>At equal load</h2>";
  for (const auto& t : tables) {
    out += "<p class=\"meta\">" + esc(at_demand_title(t)) + ": every target offered " +
           esc(at_demand_load_text(t)) + esc(at_demand_equal_text(t)) +
           (is_predicted(results) ? " (predicted, virtual time)" : "") + ".</p>";
    out += "<div class=\"table-wrap\"><table class=\"at-demand-table\" data-phase=\"" +
           esc(t.phase) + "\">" +
           th_row({"Target", "Offered req/s", "Achieved req/s", "Output tok/s", "P95 TTFT ms",
                   "P95 TPOT ms", "P95 E2E ms", "Error rate", "KV use (peak)", "KV free GiB (peak)",
                   "Capacity headroom", "Verdict"},
                  "lrrrrrrrrrrl") +
           "<tbody>";
    for (const auto& r : t.rows) {
      const std::string cls = r.outcome == "pass"   ? "text outcome-pass"
                              : r.outcome == "fail" ? "text outcome-fail"
                                                    : "text";
      out += "<tr data-target=\"" + esc(r.target) + "\">" + td(r.target, "text") +
             td(opt_fixed(r.offered_rate_rps, 2)) + td(opt_fixed(r.achieved_rate_rps, 2)) +
             td(opt_fixed(r.output_tokens_per_s, 1)) + td(opt_fixed(r.ttft_p95_ms, 0)) +
             td(opt_fixed(r.tpot_p95_ms, 1)) + td(opt_fixed(r.e2e_p95_ms, 0)) +
             td(percent(r.error_rate)) +
             td(r.kv_cache_usage_max ? format_fixed(*r.kv_cache_usage_max * 100, 0) + "%" : "-") +
             td(opt_fixed(r.memory_headroom_gib, 1)) +
             td(r.capacity_headroom ? "×" + format_fixed(*r.capacity_headroom, 2) : "-") +
             td(at_demand_verdict_text(r), cls) + "</tr>";
    }
    out += "</tbody></table></div>";
  }
  return out + "<p class=\"caption\">" + esc(kAtDemandLegend) + "</p></section>";
}

std::string jobs_section(const json& results) {
  const auto& jobs = json_member(results, "jobs");
  if (!jobs.is_array() || jobs.empty()) return "";
  std::string out =
      "<section id=\"jobs\"><h2>Jobs compared</h2><div class=\"table-wrap\"><table "
      "id=\"jobs-table\">" +
      th_row({"Label", "Kind", "Job", "Plan", "Workload fingerprint", "Comparison kind", "Targets"},
             "lllllll") +
      "<tbody>";
  for (const auto& j : jobs) {
    std::string names;
    const auto& t = json_member(j, "targets");
    if (t.is_array()) {
      for (const auto& n : t) {
        if (!names.empty()) names += ", ";
        names += n.is_string() ? n.get<std::string>() : "";
      }
    }
    const auto kind = json_string(j, "kind", "measured");
    out += "<tr data-job=\"" + esc(json_string(j, "job_id")) + "\" data-kind=\"" + esc(kind) +
           "\">" + td(json_string(j, "label"), "text") + "<td class=\"text\"><span class=\"badge" +
           std::string(kind == "predicted" ? " warn" : "") + "\">" + esc(kind) + "</span></td>" +
           td(json_string(j, "job_id"), "text") + td(json_string(j, "plan"), "text") +
           td(json_string(j, "workload_fingerprint"), "text") +
           td(json_string(j, "comparison_label"), "text") + td(names, "text") + "</tr>";
  }
  out +=
      "</tbody></table></div><p class=\"caption\">Targets are named \"target (label)\" after "
      "their job's label. A predicted job ran on simulated targets in virtual time "
      "(`llmcapd predict`); a measured one ran against the servers.</p>";
  if (json_member(results, "workloads_differ").is_boolean() &&
      results["workloads_differ"].get<bool>())
    out +=
        "<p class=\"meta\"><span class=\"badge warn\">different workloads</span> The jobs ran "
        "different workloads; "
        "their capacities are not a like-for-like comparison.</p>";
  if (json_member(results, "slas_differ").is_boolean() && results["slas_differ"].get<bool>())
    out +=
        "<p class=\"meta\" id=\"slas-differ\"><span class=\"badge warn\">different SLAs</span> "
        "The jobs were judged against different SLAs, so the charts draw no SLA line; each "
        "job's own report has its lines.</p>";
  return out + "</section>";
}

std::string steps_section(const json& results) {
  const auto rows = step_rows(results);
  if (rows.empty()) return "";
  std::string out = "<section id=\"steps\"><h2>Steps</h2>";
  std::string current;
  bool open = false;
  // The step label states the load (c=8, 12.00 rps, confirm …, soak …), so no Load column.
  const auto head = th_row({"Phase", "Step", "Req/s", "Goodput req/s (met SLO)", "Output tok/s",
                            "TTFT P50 / P95 / P99 (ms)", "TPOT P50 / P95 / P99 (ms)",
                            "E2E P95 (ms)", "Errors", "Verdict", "Reasons"},
                           "llrrrrrrrll");
  for (const auto& s : rows) {
    if (!open || s.target != current) {
      if (open) out += "</tbody></table></div>";
      current = s.target;
      open = true;
      out += "<h3>" + esc(s.target) +
             "</h3><div class=\"table-wrap\"><table class=\"steps-table\" data-target=\"" +
             esc(s.target) + "\">" + head + "<tbody>";
    }
    std::string reasons;
    for (const auto& r : s.reasons) {
      if (!reasons.empty()) reasons += "<br>";
      reasons += esc(r);
    }
    const std::string outcome = s.outcome.empty() ? "-" : s.outcome;
    out += "<tr data-outcome=\"" + esc(outcome) + "\">" + td(s.phase, "text phase") +
           td(s.label, "text step") + td(opt_fixed(s.requests_per_s, 2)) +
           goodput_cell(s.goodput_rps, s.sla_attainment) + td(opt_fixed(s.output_tokens_per_s, 1)) +
           td(triple(s.ttft_p50_ms, s.ttft_p95_ms, s.ttft_p99_ms, 0)) +
           td(triple(s.tpot_p50_ms, s.tpot_p95_ms, s.tpot_p99_ms, 1)) +
           td(opt_fixed(s.e2e_p95_ms, 0)) + td(percent(s.error_rate)) +
           "<td class=\"text verdict outcome-" + esc(outcome) + "\">" + esc(outcome) +
           (s.client_bound ? " (client-bound)" : "") + (s.partial ? " (partial)" : "") + "</td>" +
           "<td class=\"reasons\">" + reasons + "</td></tr>";
  }
  if (open) out += "</tbody></table></div>";
  return out +
         "<p class=\"caption\">Latencies in milliseconds. Goodput: requests per second that met "
         "every SLO, with their share of the requests intended (docs/metrics.md §3.3). Reasons "
         "list the checks that missed or could not be evaluated; an inconclusive step means the "
         "load generator, not the target, was the bottleneck (docs/metrics.md §4.2).</p>"
         "</section>";
}

// Scale-out with region labels: each step's overall client-side latency beside each region's.
std::string regions_section(const json& results) {
  std::string rows;
  for (const auto& s : step_rows(results)) {
    for (const auto& r : region_table(s)) {
      rows += "<tr>" + td(s.target, "text") + td(s.phase, "text") + td(s.label, "text") +
              td(r.region, "text") + td(opt_fixed(r.requests, 0)) +
              td(opt_fixed(r.ttft_p50_ms, 0)) + td(opt_fixed(r.ttft_p95_ms, 0)) +
              td(opt_fixed(r.tpot_p50_ms, 1)) + td(opt_fixed(r.tpot_p95_ms, 1)) +
              td(opt_fixed(r.e2e_p50_ms, 0)) + td(opt_fixed(r.e2e_p95_ms, 0)) + "</tr>";
    }
  }
  if (rows.empty()) return "";
  return "<section id=\"regions\"><h2>Client-side latency per region</h2><div "
         "class=\"table-wrap\"><table id=\"regions-table\">" +
         th_row({"Target", "Phase", "Step", "Region", "Requests", "TTFT P50", "TTFT P95",
                 "TPOT P50", "TPOT P95", "E2E P50", "E2E P95"},
                "llllrrrrrrr") +
         "<tbody>" + rows +
         "</tbody></table></div><p class=\"caption\">Milliseconds, measured by the agents of "
         "each region (requests intended in the window); \"all regions\" is the step's "
         "figure.</p></section>";
}

// Workload mixes: each class of every mix step, with its own percentiles and verdict.
std::string mix_section(const json& results) {
  std::string rows;
  for (const auto& s : step_rows(results)) {
    for (const auto& m : s.mix) {
      rows +=
          "<tr>" + td(s.target, "text") + td(s.phase, "text") + td(s.label, "text") +
          td(m.name, "text") + td(m.weight ? format_fixed(*m.weight * 100, 1) + "%" : "-") +
          td(m.share ? format_fixed(*m.share * 100, 1) + "%" : "-") + td(opt_fixed(m.requests, 0)) +
          td(opt_fixed(m.input_tokens_mean, 0) + " / " + opt_fixed(m.output_tokens_mean, 0)) +
          td(opt_fixed(m.output_tokens_per_s, 1)) + td(opt_fixed(m.ttft_p50_ms, 0)) +
          td(opt_fixed(m.ttft_p95_ms, 0)) + td(opt_fixed(m.tpot_p50_ms, 1)) +
          td(opt_fixed(m.tpot_p95_ms, 1)) + td(opt_fixed(m.e2e_p95_ms, 0)) +
          td(m.error_rate ? format_fixed(*m.error_rate * 100, 2) + "%" : "-") +
          td(m.outcome.empty() ? "-" : m.outcome, "text") +
          td(m.reasons.empty() ? std::string("-")
                               : m.reasons.front() +
                                     (m.reasons.size() > 1
                                          ? " (+" + std::to_string(m.reasons.size() - 1) + " more)"
                                          : ""),
             "text") +
          "</tr>";
    }
  }
  if (rows.empty()) return "";
  return "<section id=\"mix\"><h2>Workload mix: per-class results</h2><div "
         "class=\"table-wrap\"><table id=\"mix-table\">" +
         th_row({"Target", "Phase", "Step", "Class", "Weight", "Share", "Requests", "In/out tokens",
                 "Output tok/s", "TTFT P50", "TTFT P95", "TPOT P50", "TPOT P95", "E2E P95",
                 "Error rate", "Verdict", "Reasons"},
                "llllrrrrrrrrrrrll") +
         "<tbody>" + rows +
         "</tbody></table></div><p class=\"caption\">Milliseconds. Each class of a mix step is "
         "judged on its own requests (share: of the window's requests) against its SLA; the step "
         "passes only when every class passes.</p></section>";
}

// Conversations: each conversation step's sessions and its TTFT by turn index.
std::string conversation_section(const json& results) {
  std::string rows;
  for (const auto& s : step_rows(results)) {
    if (!s.conversation) continue;
    const ConversationRow& c = *s.conversation;
    std::string ttft, input;
    for (const auto& t : c.by_turn) {
      if (!ttft.empty()) {
        ttft += ", ";
        input += ", ";
      }
      ttft += opt_fixed(t.ttft_p50_ms, 0) + "/" + opt_fixed(t.ttft_p95_ms, 0);
      input += opt_fixed(t.input_tokens_mean, 0);
    }
    rows += "<tr>" + td(s.target, "text") + td(s.phase, "text") + td(s.label, "text") +
            td(opt_fixed(c.sessions_started, 0)) + td(opt_fixed(c.sessions_completed, 0)) +
            td(opt_fixed(c.sessions_failed, 0)) + td(opt_fixed(c.sessions_context_limit, 0)) +
            td(opt_fixed(c.sessions_cut, 0)) + td(opt_fixed(c.turns_per_session_mean, 2)) +
            td(opt_fixed(c.duration_p50_s, 1)) + td(opt_fixed(c.duration_p95_s, 1)) +
            td(ttft, "text") + td(input, "text") + "</tr>";
  }
  if (rows.empty()) return "";
  return "<section id=\"conversations\"><h2>Conversations: sessions and TTFT by turn</h2><div "
         "class=\"table-wrap\"><table id=\"conversation-table\">" +
         th_row({"Target", "Phase", "Step", "Started", "Completed", "Failed", "Context limit",
                 "Cut", "Turns/session", "Completed duration P50 s", "Completed duration P95 s",
                 "TTFT P50/P95 ms by turn", "Prompt tokens by turn"},
                "lllrrrrrrrrll") +
         "<tbody>" + rows +
         "</tbody></table></div><p class=\"caption\">Sessions ended by completing every turn, "
         "by a failed turn, at the context limit, or cut by the window's end; durations are "
         "those of the completed sessions (first turn's intended send to last reply's end). "
         "TTFT by turn "
         "index (1, 2, …) in milliseconds, beside each turn's mean prompt length: later turns "
         "carry the history (docs/plans.md, \"Conversations\").</p></section>";
}

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

std::string hardware_section(const json& results) {
  std::string out =
      "<section id=\"hardware\"><h2>Hardware and engine record</h2><div class=\"charts\">";
  bool any = false;
  for (const auto& t : targets_of(results)) {
    any = true;
    const auto name = json_string(t, "name");
    out += "<div class=\"record-card\" data-target=\"" + esc(name) + "\"><h3>" + esc(name) +
           "</h3><dl class=\"record\">";
    auto row = [&](std::string_view k, std::string_view v) {
      if (!v.empty()) out += "<dt>" + esc(k) + "</dt><dd>" + esc(v) + "</dd>";
    };
    row("Base URL", json_string(t, "base_url"));
    row("API", json_string(t, "api"));
    row("Model", json_string(t, "model"));
    row("Precision", json_string(t, "precision"));
    row("Simulated", json_member(t, "simulated").is_boolean()
                         ? (t["simulated"].get<bool>() ? "yes" : "no")
                         : "");
    row("Simulator", json_string(t, "simulator"));
    if (auto p = json_number(t, "price_per_hour"))
      row("Price per hour", format_fixed(*p, 2) + " " + json_string(t, "currency", "USD"));
    const auto& hw = json_member(t, "hardware");
    if (hw.is_object()) {
      for (const auto& [k, v] : hw.items()) row(k, value_text(v));
    }
    if (!hw.is_object() || hw.empty()) row("Hardware", "not recorded in the plan");
    // Load generator's own CPU use (docs/metrics.md §8.2: record it with every result).
    double cpu_max = -1, lag_max = -1;
    for (const auto& p : json_member(t, "phases").is_array() ? t["phases"] : json::array()) {
      for (const auto& s : json_member(p, "steps").is_array() ? p["steps"] : json::array()) {
        const auto& c = json_member(s, "client");
        cpu_max = std::max(cpu_max, json_number(c, "cpu_utilisation").value_or(-1));
        lag_max = std::max(lag_max, json_number(c, "schedule_lag_p99_ms").value_or(-1));
      }
    }
    if (cpu_max >= 0)
      row("Load generator CPU (max per step)", format_fixed(cpu_max * 100, 1) + "%");
    if (lag_max >= 0) row("Schedule lag P99 (max per step)", format_fixed(lag_max, 2) + " ms");
    const auto& rep = json_member(t, "repeatability");
    if (rep.is_object()) row("Repeatability", json_string(rep, "reason", rep.dump()));
    out += "</dl></div>";
  }
  if (!any) return "";
  return out + "</div></section>";
}

}  // namespace

json report_document(json results, const json& plan_document) {
  if (!results.is_object()) return results;
  if (plan_document.is_object()) results["plan_document"] = plan_document;
  return results;
}

std::string render_report_html(const json& results, const ReportOptions& options) {
  const auto plan = json_string(results, "plan", "(unnamed plan)");
  const bool predicted = is_predicted(results);
  const std::string title =
      !options.title.empty()
          ? options.title
          : (predicted ? "Predicted capacity report: " : "Capacity report: ") + plan;
  std::string out;
  out.reserve(256 * 1024);
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta name=\"generator\" content=\"llmcap\"><title>" +
      esc(title) + "</title><style>" + kCss + "</style></head><body><main>";

  // Header.
  out += "<header class=\"report-header\"><h1>" + esc(title) + "</h1>";
  const auto desc = json_string(json_member(results, "plan_document"), "description");
  if (!desc.empty()) out += "<p class=\"meta\">" + esc(desc) + "</p>";
  std::string meta = "State: " + esc(json_string(results, "state", "unknown"));
  if (!options.job_id.empty()) meta += " · Job " + esc(options.job_id);
  const auto fp = json_string(results, "workload_fingerprint");
  if (!fp.empty()) meta += " · Workload fingerprint " + esc(fp);
  if (!options.generated_at.empty()) meta += " · Generated " + esc(options.generated_at);
  out += "<p class=\"meta\">" + meta + "</p><p class=\"meta\">";
  bool simulated = false, client_bound = false;
  for (const auto& t : targets_of(results)) {
    simulated =
        simulated || (json_member(t, "simulated").is_boolean() && t["simulated"].get<bool>());
    client_bound = client_bound || json_number(t, "client_bound_steps").value_or(0) > 0;
  }
  const auto label = json_string(results, "comparison_label", "same-config");
  out += "<span class=\"badge" + std::string(label == "same-config" ? "" : " warn") + "\">" +
         esc(label) + "</span>";
  if (simulated) out += "<span class=\"badge\">simulated</span>";
  if (predicted)
    out +=
        "<span class=\"badge warn\" id=\"predicted\">predicted (virtual time), not "
        "measured</span>";
  if (json_string(results, "comparison_mode") == "predicted vs measured")
    out +=
        "<span class=\"badge warn\" id=\"predicted-vs-measured\">predicted vs measured: a "
        "prediction (virtual time) beside a measurement</span>";
  if (client_bound) out += "<span class=\"badge warn\">client-bound steps present</span>";
  const auto& error = json_member(results, "error");
  out += "</p>";
  if (!json_member(results, "plan_document").is_object())
    out +=
        "<p class=\"meta\" id=\"no-plan\"><span class=\"badge warn\">plan missing</span> This "
        "document does not carry the plan it ran (plan_document), so the charts have no SLA "
        "lines; render the report from `llmcapd run --out` output or from the daemon "
        "(GET /v1/jobs/JOB_ID/report).</p>";
  if (error.is_string())
    out += "<p class=\"meta outcome-fail\">Error: " + esc(error.get<std::string>()) + "</p>";
  out += "</header>";

  out += "<section id=\"capacity\"><h2>Qualified capacity</h2>" + capacity_table(results) +
         "</section>";
  out += jobs_section(results);
  out += prediction_check_section(results);
  out += comparison_section(results);
  out += demand_section(results);
  out += at_demand_section(results);

  // Closed loop on the left, open loop on the right, row by row (throughput, TTFT, TPOT).
  const auto conc = load_charts(results, true);
  const auto rate = load_charts(results, false);
  if (!conc.empty() || !rate.empty()) {
    out +=
        "<section id=\"load-charts\"><h2>Throughput and latency under load</h2><p "
        "class=\"caption\">";
    if (!conc.empty()) out += "Closed loop: concurrency sweeps (fixed requests in flight). ";
    if (!rate.empty())
      out +=
          "Open loop: rate sweeps, capacity search and soak steps (offered rate, Poisson arrivals "
          "unless the plan says otherwise).";
    out += "</p><div class=\"charts\">";
    for (std::size_t i = 0; i < std::max(conc.size(), rate.size()); ++i) {
      if (i < conc.size()) out += conc[i];
      if (i < rate.size()) out += rate[i];
    }
    out += "</div></section>";
  }
  out += burst_section(results);
  out += soak_section(results);
  out += steps_section(results);
  out += regions_section(results);
  out += mix_section(results);
  out += conversation_section(results);
  if (options.include_step_cdfs) out += cdf_section(results);
  out += hardware_section(results);
  if (options.include_plan) {
    const auto& pd = json_member(results, "plan_document");
    out +=
        "<section id=\"plan\"><h2>Plan</h2><p class=\"caption\">The normalised plan this job ran "
        "(secrets redacted), so the page stands alone.</p>";
    out += "<pre id=\"plan-json\">" +
           esc(pd.is_null() ? std::string("(not in the results document)")
                            : pd.dump(2, ' ', false, json::error_handler_t::replace)) +
           "</pre></section>";
  }
  out +=
      "<footer><p class=\"caption\">Generated by llmcap. Definitions: TTFT, TPOT, ITL, E2E and "
      "error rate as in the "
      "project's metric definitions; percentiles are per step.</p></footer></main></body></html>\n";
  return out;
}

}  // namespace llmcap::api
