#include "analysis/repeatability.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace llmcap::analysis {
namespace {

TEST(StudentT, TableValues) {
  EXPECT_DOUBLE_EQ(*student_t_critical(1, 0.95), 12.706);
  EXPECT_DOUBLE_EQ(*student_t_critical(4, 0.95), 2.776);
  EXPECT_DOUBLE_EQ(*student_t_critical(9, 0.90), 1.833);
  EXPECT_DOUBLE_EQ(*student_t_critical(2, 0.99), 9.925);
  EXPECT_DOUBLE_EQ(*student_t_critical(30, 0.95), 2.042);
  EXPECT_DOUBLE_EQ(*student_t_critical(35, 0.95), 2.042);  // next lower tabulated df
  EXPECT_DOUBLE_EQ(*student_t_critical(60, 0.95), 2.000);
  EXPECT_DOUBLE_EQ(*student_t_critical(5000, 0.99), 2.617);
  EXPECT_FALSE(student_t_critical(0, 0.95).has_value());
  EXPECT_FALSE(student_t_critical(5, 0.80).has_value());
  // Monotone: more runs, narrower t.
  for (int df = 1; df < 200; ++df) {
    EXPECT_GE(*student_t_critical(df, 0.95), *student_t_critical(df + 1, 0.95));
  }
}

TEST(Repeatability, AgreeingRuns) {
  const auto r = assess_repeatability({100.0, 102.0, 98.0});
  EXPECT_EQ(r.runs, 3u);
  EXPECT_DOUBLE_EQ(r.mean, 100);
  EXPECT_DOUBLE_EQ(r.min, 98);
  EXPECT_DOUBLE_EQ(r.max, 102);
  EXPECT_DOUBLE_EQ(r.stddev, 2);
  EXPECT_DOUBLE_EQ(r.relative_spread, 0.04);
  EXPECT_DOUBLE_EQ(*r.t_critical, 4.303);
  const double half = 4.303 * 2 / std::sqrt(3.0);
  EXPECT_NEAR(*r.ci_low, 100 - half, 1e-12);
  EXPECT_NEAR(*r.ci_high, 100 + half, 1e-12);
  EXPECT_FALSE(r.inconclusive);
  EXPECT_TRUE(r.reason.empty());
}

TEST(Repeatability, DisagreeingRunsAreInconclusive) {
  const auto r = assess_repeatability({10.0, 12.0, 11.0, 13.0, 9.0});
  EXPECT_DOUBLE_EQ(r.mean, 11);
  EXPECT_NEAR(r.stddev, std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(*r.ci_high - r.mean, 2.776 * std::sqrt(2.5) / std::sqrt(5.0), 1e-12);
  EXPECT_NEAR(r.relative_spread, 4.0 / 11, 1e-12);
  EXPECT_TRUE(r.inconclusive);
  EXPECT_NE(r.reason.find("runs disagree"), std::string::npos) << r.reason;
  // A looser bound accepts them.
  EXPECT_FALSE(assess_repeatability({10.0, 12.0, 11.0, 13.0, 9.0}, {0.5, 0.95}).inconclusive);
}

TEST(Repeatability, MissingCapacity) {
  const auto mixed = assess_repeatability({10.0, std::nullopt, 10.2});
  EXPECT_TRUE(mixed.inconclusive);
  EXPECT_EQ(mixed.runs_with_value, 2u);
  EXPECT_NE(mixed.reason.find("1 of 3"), std::string::npos) << mixed.reason;
  const auto none = assess_repeatability({std::nullopt, std::nullopt});
  EXPECT_FALSE(none.inconclusive);  // consistently no capacity
  EXPECT_EQ(none.runs_with_value, 0u);
  const auto single = assess_repeatability({42.0});
  EXPECT_FALSE(single.ci_low.has_value());
  EXPECT_DOUBLE_EQ(single.mean, 42);
}

TEST(Repeatability, BadConfidenceThrows) {
  EXPECT_THROW(assess_repeatability({1.0, 2.0}, {0.1, 0.5}), std::invalid_argument);
}

}  // namespace
}  // namespace llmcap::analysis
