#include "analysis/repeatability.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace llmcap::analysis {

namespace {

// Two-sided critical values of Student's t. Rows: df 1..30, 40, 60, 120, ∞.
constexpr std::array<int, 34> kDf = {1,  2,  3,  4,  5,  6,  7,  8,  9,   10,     11, 12,
                                     13, 14, 15, 16, 17, 18, 19, 20, 21,  22,     23, 24,
                                     25, 26, 27, 28, 29, 30, 40, 60, 120, 1 << 30};
constexpr std::array<double, 34> kT90 = {
    6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782,
    1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
    1.708, 1.706, 1.703, 1.701, 1.699, 1.697, 1.684, 1.671, 1.658, 1.645};
constexpr std::array<double, 34> kT95 = {
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
    2.160,  2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
    2.060,  2.056, 2.052, 2.048, 2.045, 2.042, 2.021, 2.000, 1.980, 1.960};
constexpr std::array<double, 34> kT99 = {
    63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055,
    3.012,  2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797,
    2.787,  2.779, 2.771, 2.763, 2.756, 2.750, 2.704, 2.660, 2.617, 2.576};

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::optional<double> student_t_critical(int df, double confidence) {
  if (df < 1) return std::nullopt;
  const std::array<double, 34>* table = nullptr;
  if (std::fabs(confidence - 0.90) < 1e-9) table = &kT90;
  if (std::fabs(confidence - 0.95) < 1e-9) table = &kT95;
  if (std::fabs(confidence - 0.99) < 1e-9) table = &kT99;
  if (!table) return std::nullopt;
  std::size_t row = 0;
  for (std::size_t i = 0; i < kDf.size(); ++i) {
    if (kDf[i] <= df) row = i;  // largest tabulated df not above df
  }
  return (*table)[row];
}

Repeatability assess_repeatability(const std::vector<std::optional<double>>& values,
                                   const RepeatabilityOptions& options) {
  if (!student_t_critical(1, options.confidence)) {
    throw std::invalid_argument("confidence: must be 0.90, 0.95 or 0.99");
  }
  Repeatability r;
  r.runs = values.size();
  std::vector<double> v;
  for (const auto& x : values) {
    if (x) v.push_back(*x);
  }
  r.runs_with_value = v.size();
  if (v.empty()) return r;
  const auto n = static_cast<double>(v.size());
  r.min = *std::min_element(v.begin(), v.end());
  r.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  r.mean = sum / n;
  if (v.size() >= 2) {
    double sq = 0;
    for (double x : v) sq += (x - r.mean) * (x - r.mean);
    r.stddev = std::sqrt(sq / (n - 1));
    r.t_critical = student_t_critical(static_cast<int>(v.size()) - 1, options.confidence);
    const double half = *r.t_critical * r.stddev / std::sqrt(n);
    r.ci_low = r.mean - half;
    r.ci_high = r.mean + half;
  }
  if (r.mean != 0) r.relative_spread = (r.max - r.min) / std::fabs(r.mean);
  if (r.runs_with_value < r.runs) {
    r.inconclusive = true;
    r.reason = std::to_string(r.runs - r.runs_with_value) + " of " + std::to_string(r.runs) +
               " runs found no capacity while the others did";
  } else if (r.relative_spread > options.max_relative_spread) {
    r.inconclusive = true;
    r.reason = "runs disagree: spread " + fmt(r.relative_spread * 100) + "% of the mean > " +
               fmt(options.max_relative_spread * 100) + "%";
  }
  return r;
}

}  // namespace llmcap::analysis
