#include "analysis/knee.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace llmcap::analysis {
namespace {

TEST(Knee, SaturatingSweep) {
  // Throughput grows 100 tok/s per stream up to 16 streams, then barely; latency rises.
  std::vector<SweepPoint> pts = {{64, 1660, 9e9, 0}, {1, 100, 1e9, 0},   {2, 200, 1e9, 0},
                                 {4, 400, 1.1e9, 0}, {8, 800, 1.2e9, 0}, {16, 1600, 1.5e9, 0},
                                 {32, 1650, 3e9, 0}};
  const auto k = find_knee(pts);
  ASSERT_TRUE(k.has_value());
  EXPECT_TRUE(k->found);
  EXPECT_EQ(k->point.concurrency, 16);
  EXPECT_EQ(k->index, 4u);  // sorted order
  EXPECT_DOUBLE_EQ(k->initial_gain_per_stream, 100);
  EXPECT_DOUBLE_EQ(k->gain_after_per_stream, 50.0 / 16);
}

TEST(Knee, ThresholdIsConfigurable) {
  std::vector<SweepPoint> pts = {{1, 100, 1, 0}, {2, 190, 2, 0}, {4, 300, 3, 0}, {8, 400, 4, 0}};
  // Marginal gains per stream: 90, 55, 25 (initial 100).
  EXPECT_FALSE(find_knee(pts)->found);  // nothing below 10
  EXPECT_EQ(find_knee(pts)->point.concurrency, 8);
  const auto k = find_knee(pts, {0.3});
  EXPECT_TRUE(k->found);
  EXPECT_EQ(k->point.concurrency, 4);                      // 25 < 30 after 4
  EXPECT_EQ(find_knee(pts, {0.6})->point.concurrency, 2);  // 55 < 60 after 2
}

TEST(Knee, DomainRtx4090SweepHasNoKneeYet) {
  // docs/metrics.md §11: Mistral-7B on an RTX 4090, 210/377/644/975/1190 tok/s at 4/8/16/32/48.
  std::vector<SweepPoint> pts = {{4, 210, 53e6, 0},
                                 {8, 377, 100e6, 0},
                                 {16, 644, 200e6, 0},
                                 {32, 975, 400e6, 0},
                                 {48, 1190, 840e6, 0}};
  const auto k = find_knee(pts);
  EXPECT_FALSE(k->found);  // last marginal gain 13.4 > 0.1 × 52.5
  EXPECT_EQ(k->point.concurrency, 48);
  EXPECT_EQ(find_knee(pts, {0.3})->point.concurrency, 32);  // 13.4 < 15.75
}

TEST(Knee, NeedsRisingLatency) {
  std::vector<SweepPoint> pts = {{1, 100, 5, 0}, {2, 101, 5, 0}, {4, 102, 6, 0}};
  const auto k = find_knee(pts);
  EXPECT_TRUE(k->found);
  EXPECT_EQ(k->point.concurrency, 2);  // 1 → 2 gain tiny but latency flat; 2 → 4 rises
}

TEST(Knee, BadInput) {
  EXPECT_FALSE(find_knee({}).has_value());
  EXPECT_FALSE(find_knee({{0, 0, 0, 0}}).has_value());
  EXPECT_THROW(find_knee({{1, 1, 1, 0}}, {1.5}), std::invalid_argument);
  const auto single = find_knee({{8, 500, 1, 0}});
  EXPECT_FALSE(single->found);
  EXPECT_EQ(single->point.concurrency, 8);
}

}  // namespace
}  // namespace llmcap::analysis
