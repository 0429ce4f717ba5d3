#include "agent/length_calibrator.h"

#include <gtest/gtest.h>

namespace llmcap::agent {
namespace {

TEST(LengthCalibrator, FitRecoversSlopeAndOverhead) {
  LengthCalibrator c;
  c.fit({{16, 16 * 1.25 + 3}, {200, 200 * 1.25 + 3}});
  EXPECT_NEAR(c.tokens_per_word(), 1.25, 1e-9);
  EXPECT_NEAR(c.overhead_tokens(), 3, 1e-9);
  EXPECT_EQ(c.words_for(253), 200);
  EXPECT_EQ(c.words_for(1), 1);  // never below one word
  EXPECT_EQ(c.words_for_raw(125), 100);
}

TEST(LengthCalibrator, SingleSizeFitKeepsOverhead) {
  LengthCalibrator c(1.3, 2);
  c.fit({{100, 152}, {100, 152}});
  EXPECT_NEAR(c.tokens_per_word(), 1.5, 1e-9);
  EXPECT_NEAR(c.overhead_tokens(), 2, 1e-9);
}

TEST(LengthCalibrator, ObserveAdjustsTheRatio) {
  LengthCalibrator c(1.0, 0);
  for (int i = 0; i < 100; ++i) c.observe(100, 140);
  EXPECT_NEAR(c.tokens_per_word(), 1.4, 1e-9);
  EXPECT_EQ(c.observations(), 100u);
  c.observe(0, 5);    // ignored
  c.observe(10, -1);  // ignored
  EXPECT_EQ(c.observations(), 100u);
}

TEST(LengthCalibrator, ObserveRefinesAFitRatherThanReplacingIt) {
  LengthCalibrator c;
  c.fit({{100, 100}, {300, 300}});  // 1.0 per word, 0 overhead; seeded with 400 words
  c.observe(400, 800);              // one observation at 2.0 per word
  EXPECT_NEAR(c.tokens_per_word(), 1.5, 1e-9);
}

TEST(LengthCalibrator, BadFitIsIgnored) {
  LengthCalibrator c(1.3, 0);
  c.fit({{0, 10}, {-5, 3}});
  EXPECT_DOUBLE_EQ(c.tokens_per_word(), 1.3);
  c.fit({{10, 30}, {20, 10}});  // negative slope: kept as before
  EXPECT_DOUBLE_EQ(c.tokens_per_word(), 1.3);
}

}  // namespace
}  // namespace llmcap::agent
