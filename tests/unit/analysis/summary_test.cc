#include "analysis/summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace llmcap::analysis {
namespace {

TEST(Percentile, LinearInterpolationBetweenClosestRanks) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(*percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(*percentile(v, 25), 1.75);  // h = 0.75
  EXPECT_DOUBLE_EQ(*percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(*percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(*percentile(v, -5), 1);   // clamped
  EXPECT_DOUBLE_EQ(*percentile(v, 150), 4);  // clamped
}

TEST(Percentile, OneToHundred) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_NEAR(*percentile(v, 90), 90.1, 1e-9);   // h = 89.1
  EXPECT_NEAR(*percentile(v, 99), 99.01, 1e-9);  // h = 98.01
  EXPECT_NEAR(*percentile(v, 99.9), 99.901, 1e-9);
}

TEST(Percentile, EmptyAndSingle) {
  EXPECT_FALSE(percentile({}, 50).has_value());
  EXPECT_DOUBLE_EQ(*percentile({7}, 0), 7);
  EXPECT_DOUBLE_EQ(*percentile({7}, 99.9), 7);
}

TEST(Summarize, MomentsAndExtremes) {
  const Summary s = summarize({9, 2, 4, 4, 5, 4, 7, 5});  // unsorted on purpose
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);  // sample stddev
  EXPECT_DOUBLE_EQ(s.p50, 4.5);
  EXPECT_NEAR(s.p90, 7.6, 1e-12);  // h = 6.3 between 7 and 9
}

TEST(Summarize, PercentilesMatchPercentileFunction) {
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) v.push_back((i * 7919) % 1000);
  const Summary s = summarize(v);
  std::sort(v.begin(), v.end());
  EXPECT_DOUBLE_EQ(s.p95, *percentile(v, 95));
  EXPECT_DOUBLE_EQ(s.p99, *percentile(v, 99));
  EXPECT_DOUBLE_EQ(s.p999, *percentile(v, 99.9));
  EXPECT_DOUBLE_EQ(*s.at(99.9), s.p999);
  EXPECT_DOUBLE_EQ(*s.at(50), s.p50);
  EXPECT_FALSE(s.at(97).has_value());
}

TEST(Summarize, EmptyAndNaN) {
  const Summary empty = summarize({});
  EXPECT_TRUE(empty.empty());
  EXPECT_FALSE(empty.at(50).has_value());
  const Summary s = summarize({std::numeric_limits<double>::quiet_NaN(), 3.0});
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.p99, 3);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
}

TEST(Summarize, KnownPercentilesOnly) {
  EXPECT_TRUE(is_summary_percentile(99.9));
  EXPECT_TRUE(is_summary_percentile(95));
  EXPECT_FALSE(is_summary_percentile(99.5));
}

}  // namespace
}  // namespace llmcap::analysis
