#include "analysis/burst.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/unit/analysis/test_samples.h"

namespace llmcap::analysis {
namespace {

using testing::kMs;
using testing::kSec;

// 10 rps for 200 s. Burst in [60 s, 90 s). Requests intended in [60 s, 110 s) see 3 s TTFT.
// In flight: 5 before the burst, rising to 50 at 90 s, draining linearly to 5 at 120 s.
BurstRecoveryInput scenario(std::vector<RequestSample>& samples, std::int64_t slow_until_ns) {
  samples.clear();
  for (int k = 0; k < 2000; ++k) {
    const std::int64_t t = k * 100 * kMs;
    const bool slow = t >= 60 * kSec && t < slow_until_ns;
    samples.push_back(testing::ok_sample(k, t, slow ? 3000 * kMs : 200 * kMs));
  }
  BurstRecoveryInput in;
  in.samples = samples;
  for (int s = 0; s <= 200; ++s) {
    double y = 5;
    if (s >= 60 && s <= 90) y = 5 + 45.0 * (s - 60) / 30;
    if (s > 90 && s <= 120) y = 50 - 1.5 * (s - 90);
    in.in_flight.push_back({s * kSec, y});
  }
  in.burst_start_ns = 60 * kSec;
  in.burst_end_ns = 90 * kSec;
  in.observation_end_ns = 200 * kSec;
  in.window_ns = 10 * kSec;
  in.step_ns = 1 * kSec;
  in.ttft_p95_limit_ms = 1000;
  return in;
}

TEST(BurstRecovery, RecoversWhenLatencyAndBacklogAreBack) {
  std::vector<RequestSample> samples;
  const BurstRecovery r = burst_recovery(scenario(samples, 110 * kSec));
  EXPECT_DOUBLE_EQ(r.pre_burst_in_flight, 5);
  EXPECT_DOUBLE_EQ(r.peak_in_flight, 50);
  // Drained level 5 × 1.1 + 1 = 6.5: 50 − 1.5 s ≤ 6.5 first at s = 29 → t = 119 s.
  ASSERT_TRUE(r.backlog_drained_ns.has_value());
  EXPECT_EQ(*r.backlog_drained_ns, 29 * kSec);
  // Window [t, t+10 s) of 100 requests: P95 ≤ 1 s needs ≤ 4 slow ones → t ≥ 109.6 → 110 s.
  ASSERT_TRUE(r.latency_recovered_ns.has_value());
  EXPECT_EQ(*r.latency_recovered_ns, 20 * kSec);
  EXPECT_TRUE(r.recovered);
  EXPECT_EQ(*r.recovery_ns, 29 * kSec);  // the later of the two
}

TEST(BurstRecovery, LatencyCanBeTheLaterCondition) {
  std::vector<RequestSample> samples;
  const BurstRecovery r = burst_recovery(scenario(samples, 150 * kSec));
  EXPECT_EQ(*r.backlog_drained_ns, 29 * kSec);
  EXPECT_EQ(*r.latency_recovered_ns, 60 * kSec);
  EXPECT_EQ(*r.recovery_ns, 60 * kSec);
}

TEST(BurstRecovery, NeverRecoversIsAValidAnswer) {
  std::vector<RequestSample> samples;
  BurstRecoveryInput in = scenario(samples, 1000 * kSec);  // slow to the end
  BurstRecovery r = burst_recovery(in);
  EXPECT_FALSE(r.recovered);
  EXPECT_FALSE(r.recovery_ns.has_value());
  EXPECT_FALSE(r.latency_recovered_ns.has_value());
  EXPECT_TRUE(r.backlog_drained_ns.has_value());

  in = scenario(samples, 110 * kSec);
  for (auto& p : in.in_flight) {
    if (p.t_ns > 90 * kSec) p.in_flight = 40;  // backlog stuck
  }
  r = burst_recovery(in);
  EXPECT_FALSE(r.recovered);
  EXPECT_FALSE(r.backlog_drained_ns.has_value());
  EXPECT_TRUE(r.latency_recovered_ns.has_value());
}

TEST(BurstRecovery, BadOptionsNameTheField) {
  std::vector<RequestSample> samples;
  BurstRecoveryInput in = scenario(samples, 110 * kSec);
  in.step_ns = 0;
  EXPECT_THROW(burst_recovery(in), std::invalid_argument);
  in = scenario(samples, 110 * kSec);
  in.observation_end_ns = in.burst_end_ns;
  try {
    burst_recovery(in);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("observation_end_ns"), std::string::npos);
  }
}

}  // namespace
}  // namespace llmcap::analysis
