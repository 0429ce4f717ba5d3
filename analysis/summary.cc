#include "analysis/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace llmcap::analysis {

namespace {
constexpr double kPercentileTolerance = 1e-9;
}  // namespace

bool is_summary_percentile(double p) {
  for (double known : {50.0, 90.0, 95.0, 99.0, 99.9}) {
    if (std::fabs(p - known) < kPercentileTolerance) return true;
  }
  return false;
}

bool is_valid_percentile(double p) { return p > 0 && p < 100; }

std::string percentile_label(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", p);
  return buf;
}

std::vector<double> extra_percentiles(const std::vector<double>& wanted) {
  std::vector<double> out;
  for (double p : wanted) {
    if (!is_valid_percentile(p) || is_summary_percentile(p)) continue;
    if (std::none_of(out.begin(), out.end(),
                     [p](double q) { return std::fabs(p - q) < kPercentileTolerance; }))
      out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<double> Summary::at(double p) const {
  if (count == 0) return std::nullopt;
  if (std::fabs(p - 50.0) < kPercentileTolerance) return p50;
  if (std::fabs(p - 90.0) < kPercentileTolerance) return p90;
  if (std::fabs(p - 95.0) < kPercentileTolerance) return p95;
  if (std::fabs(p - 99.0) < kPercentileTolerance) return p99;
  if (std::fabs(p - 99.9) < kPercentileTolerance) return p999;
  for (const auto& [q, v] : extra)
    if (std::fabs(p - q) < kPercentileTolerance) return v;
  return std::nullopt;
}

std::optional<double> percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::nullopt;
  p = std::clamp(p, 0.0, 100.0);
  const double h = static_cast<double>(sorted.size() - 1) * p / 100.0;
  const auto lower = static_cast<std::size_t>(std::floor(h));
  if (lower + 1 >= sorted.size()) return sorted.back();
  const double fraction = h - static_cast<double>(lower);
  return sorted[lower] + fraction * (sorted[lower + 1] - sorted[lower]);
}

Summary summarize(std::vector<double> values, const std::vector<double>& extra) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.min = values.front();
  s.max = values.back();
  // Two-pass mean/variance: exact enough for latencies in ns (≤ 1e13) and counts ≤ 1e7.
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  if (values.size() >= 2) {
    double squares = 0;
    for (double v : values) squares += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(squares / static_cast<double>(values.size() - 1));
  }
  s.p50 = *percentile(values, 50);
  s.p90 = *percentile(values, 90);
  s.p95 = *percentile(values, 95);
  s.p99 = *percentile(values, 99);
  s.p999 = *percentile(values, 99.9);
  for (double p : extra) s.extra.emplace_back(p, *percentile(values, p));
  return s;
}

}  // namespace llmcap::analysis
