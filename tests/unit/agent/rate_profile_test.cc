#include "agent/rate_profile.h"

#include <gtest/gtest.h>

namespace llmcap::agent {
namespace {

TEST(RateProfile, ConstantRateAndIntegral) {
  const auto p = RateProfile::constant(10);
  EXPECT_DOUBLE_EQ(p.rate_at(0), 10);
  EXPECT_DOUBLE_EQ(p.rate_at(100), 10);
  EXPECT_DOUBLE_EQ(p.cumulative(3.5), 35);
  EXPECT_FALSE(p.validate().has_value());
}

TEST(RateProfile, StepsHoldTheLastRate) {
  const auto p = RateProfile::steps({{2, 5}, {3, 20}});
  EXPECT_DOUBLE_EQ(p.rate_at(1), 5);
  EXPECT_DOUBLE_EQ(p.rate_at(2), 20);
  EXPECT_DOUBLE_EQ(p.rate_at(10), 20);
  EXPECT_DOUBLE_EQ(p.cumulative(5), 10 + 60);
  EXPECT_DOUBLE_EQ(p.cumulative(6), 90);
}

TEST(RateProfile, RampIsLinear) {
  const auto p = RateProfile::ramp(0, 100, 10);
  EXPECT_DOUBLE_EQ(p.rate_at(5), 50);
  EXPECT_DOUBLE_EQ(p.cumulative(10), 500);
  EXPECT_DOUBLE_EQ(p.cumulative(12), 700);
}

TEST(RateProfile, BurstMultipliesForItsDuration) {
  const auto p = RateProfile::burst(10, 4, 5, 2);
  EXPECT_DOUBLE_EQ(p.rate_at(4.9), 10);
  EXPECT_DOUBLE_EQ(p.rate_at(5), 40);
  EXPECT_DOUBLE_EQ(p.rate_at(7), 10);
  EXPECT_DOUBLE_EQ(p.cumulative(10), 50 + 80 + 30);
}

TEST(RateProfile, ValidationNamesTheSegment) {
  auto p = RateProfile::from_segments({{0, 1, 1, 1}, {2, 3, 1, 1}});
  ASSERT_TRUE(p.validate().has_value());
  EXPECT_NE(p.validate()->find("segment 1"), std::string::npos);
  p = RateProfile::from_segments({{0, 1, -1, 1}});
  EXPECT_NE(p.validate()->find("rate must be >= 0"), std::string::npos);
  EXPECT_TRUE(RateProfile::from_segments({}).validate().has_value());
}

}  // namespace
}  // namespace llmcap::agent
