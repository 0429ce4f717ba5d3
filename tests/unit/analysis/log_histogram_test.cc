#include "analysis/log_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace llmcap::analysis {
namespace {

// Nearest-rank order statistic (the one LogHistogram::quantile approximates).
double nearest_rank(const std::vector<double>& sorted, double q) {
  const auto rank = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size()))));
  return sorted[rank - 1];
}

TEST(LogHistogram, QuantilesWithinOnePercentOverWideRange) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> exponent(0, 12);  // 1 .. 1e12, log-uniform
  LogHistogram h;
  std::vector<double> values;
  for (int i = 0; i < 50000; ++i) {
    const double v = std::pow(10.0, exponent(rng));
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  double worst = 0;
  for (double q : {0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    const double truth = nearest_rank(values, q);
    const double err = std::fabs(h.quantile(q) - truth) / truth;
    worst = std::max(worst, err);
    EXPECT_LE(err, LogHistogram::kRelativeError + 1e-9) << "q=" << q;
  }
  std::cout << "[ error ] worst relative quantile error " << worst << "\n";
  EXPECT_EQ(h.count(), 50000u);
  EXPECT_DOUBLE_EQ(h.min(), values.front());
  EXPECT_DOUBLE_EQ(h.max(), values.back());
}

TEST(LogHistogram, TypicalItlDistribution) {
  // Gaps around 20 ms with a tail: every percentile within 1% of the exact one.
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> gap(std::log(20e6), 0.5);
  LogHistogram h;
  std::vector<double> values;
  for (int i = 0; i < 20000; ++i) {
    const double v = gap(rng);
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.95, 0.99, 0.999}) {
    const double truth = nearest_rank(values, q);
    EXPECT_NEAR(h.quantile(q), truth, truth * 0.01) << q;
  }
  double sum = 0;
  for (double v : values) sum += v;
  EXPECT_NEAR(h.mean(), sum / 20000, 1e-6 * sum / 20000);  // mean is exact
}

TEST(LogHistogram, MergeEqualsRecordingIntoOne) {
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> d(0, 1e9);
  LogHistogram a, b, all;
  for (int i = 0; i < 5000; ++i) {
    const double v = d(rng);
    (i % 3 == 0 ? a : b).record(v);
    all.record(v);
  }
  LogHistogram merged = a;
  merged.merge(b);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.buckets().size(), all.buckets().size());
  for (double q : {0.1, 0.5, 0.99}) EXPECT_DOUBLE_EQ(merged.quantile(q), all.quantile(q));
  EXPECT_DOUBLE_EQ(merged.min(), all.min());
  EXPECT_DOUBLE_EQ(merged.max(), all.max());
  EXPECT_NEAR(merged.sum(), all.sum(), all.sum() * 1e-12);
  // Merging an empty histogram changes nothing; merging into an empty one copies.
  LogHistogram copy = all;
  copy.merge(LogHistogram());
  EXPECT_EQ(copy, all);
  LogHistogram empty;
  empty.merge(all);
  EXPECT_EQ(empty, all);
}

TEST(LogHistogram, FromBucketsRoundTrip) {
  LogHistogram h;
  for (double v : {0.0, 0.5, 1.0, 2.0, 3.0, 1e6, 2e6, 2e6, 5e11}) h.record(v);
  h.record(1e13);  // overflow
  const auto rebuilt =
      LogHistogram::from_buckets(h.buckets(), h.sum(), h.min(), h.max(), h.overflow());
  EXPECT_EQ(rebuilt, h);
  EXPECT_EQ(rebuilt.count(), 10u);
  EXPECT_EQ(h.buckets().front().index, -1);  // zero bucket
  EXPECT_EQ(h.buckets().front().count, 2u);
  // Out-of-range bucket indices are ignored rather than crashing.
  const auto odd = LogHistogram::from_buckets({{1 << 20, 5}, {10, 1}}, 10, 10, 10);
  EXPECT_EQ(odd.count(), 1u);
}

TEST(LogHistogram, EdgeCases) {
  LogHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_DOUBLE_EQ(h.quantile(0.5), 0);
  EXPECT_DOUBLE_EQ(h.mean(), 0);
  EXPECT_DOUBLE_EQ(h.min(), 0);
  h.record(std::numeric_limits<double>::quiet_NaN());
  h.record(5, 0);
  EXPECT_EQ(h.count(), 0u);  // NaN and zero counts ignored
  h.record(-3);              // negative → 0
  EXPECT_DOUBLE_EQ(h.min(), 0);
  EXPECT_DOUBLE_EQ(h.quantile(1), 0);
  h.record(1000, 9);  // count > 1
  EXPECT_EQ(h.count(), 10u);
  EXPECT_NEAR(h.quantile(0.5), 1000, 10);
  EXPECT_DOUBLE_EQ(h.quantile(0.0), 0);
  EXPECT_DOUBLE_EQ(h.quantile(2.0), 1000);  // q clamped; result clamped to max
  EXPECT_DOUBLE_EQ(h.max(), 1000);
  h.record(1e15);  // beyond 2^40: clamped and counted
  EXPECT_EQ(h.overflow(), 1u);
  EXPECT_DOUBLE_EQ(h.max(), 1099511627776.0);
  h.clear();
  EXPECT_EQ(h, LogHistogram());
}

TEST(LogHistogram, SingleValueIsExact) {
  LogHistogram h;
  h.record(12345.0, 3);
  for (double q : {0.0, 0.5, 1.0}) EXPECT_DOUBLE_EQ(h.quantile(q), 12345.0);  // clamped to min/max
}

}  // namespace
}  // namespace llmcap::analysis
