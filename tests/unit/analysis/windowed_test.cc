#include "analysis/windowed.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/unit/analysis/test_samples.h"

namespace llmcap::analysis {
namespace {

using testing::kMs;
using testing::kSec;

// 10 rps for 95 s; requests intended in [30 s, 60 s) are slow (TTFT 2 s).
std::vector<RequestSample> samples_with_slow_middle() {
  std::vector<RequestSample> v;
  for (int k = 0; k < 950; ++k) {
    const std::int64_t t = k * 100 * kMs;
    const bool slow = t >= 30 * kSec && t < 60 * kSec;
    v.push_back(testing::ok_sample(k, t, slow ? 2000 * kMs : 200 * kMs));
  }
  return v;
}

SlaSpec windowed_sla() {
  SlaSpec s;
  s.bounds = {{SlaMetric::kTtft, 95, 1000}, {SlaMetric::kTpot, 95, 35}};
  return s;
}

TEST(Windows, FullWindowsOnly) {
  const auto w = make_windows({0, 95 * kSec, 30 * kSec});
  ASSERT_EQ(w.size(), 3u);  // the 5 s remainder is dropped
  EXPECT_EQ(w[2].first, 60 * kSec);
  EXPECT_EQ(w[2].second, 90 * kSec);
  const auto single = make_windows({0, 10 * kSec, 30 * kSec});
  ASSERT_EQ(single.size(), 1u);  // shorter than one window: kept as the only window
  EXPECT_EQ(single[0].second, 10 * kSec);
  EXPECT_THROW(make_windows({0, kSec, 0}), std::invalid_argument);
  EXPECT_THROW(make_windows({kSec, kSec, kSec}), std::invalid_argument);
}

TEST(WindowedCompliance, ShareOfWindowsPerBound) {
  const auto samples = samples_with_slow_middle();
  const auto c = windowed_compliance(samples, windowed_sla(), {0, 95 * kSec, 30 * kSec});
  ASSERT_EQ(c.windows.size(), 3u);
  EXPECT_EQ(c.windows[0].intended, 300u);
  EXPECT_TRUE(c.windows[0].all_held);
  EXPECT_FALSE(c.windows[1].all_held);
  EXPECT_FALSE(c.windows[1].bounds[0].held);
  EXPECT_DOUBLE_EQ(*c.windows[1].bounds[0].measured_ns, 2001.0 * kMs);
  EXPECT_TRUE(c.windows[1].bounds[1].held);  // TPOT fine throughout
  ASSERT_EQ(c.bounds.size(), 2u);
  EXPECT_EQ(c.bounds[0].windows_with_data, 3u);
  EXPECT_EQ(c.bounds[0].windows_held, 2u);
  EXPECT_DOUBLE_EQ(c.bounds[0].share_held, 2.0 / 3);
  EXPECT_DOUBLE_EQ(c.bounds[1].share_held, 1.0);
  EXPECT_DOUBLE_EQ(c.all_held_share, 2.0 / 3);
  EXPECT_DOUBLE_EQ(c.error_rate_share_held, 1.0);
}

TEST(WindowedCompliance, ErrorRatePerWindow) {
  auto samples = samples_with_slow_middle();
  for (auto& s : samples) {
    if (s.t_intended_ns < 30 * kSec && s.index % 20 == 0) {  // 5% errors in window 0
      s = testing::failed_sample(s.index, s.t_intended_ns, ErrorClass::kHttp5xx);
    }
  }
  SlaSpec s;  // no bounds: only the error rule
  const auto c = windowed_compliance(samples, s, {0, 90 * kSec, 30 * kSec});
  EXPECT_DOUBLE_EQ(c.windows[0].error_rate, 0.05);
  EXPECT_FALSE(c.windows[0].all_held);
  EXPECT_DOUBLE_EQ(c.error_rate_share_held, 2.0 / 3);
}

TEST(WindowedCompliance, ItlFromRecordedTokenTimes) {
  std::vector<RequestSample> samples;
  for (int k = 0; k < 60; ++k) {
    auto s = testing::ok_sample(k, k * kSec, 100 * kMs, 3);
    const bool stall = k >= 30;  // second window: one 300 ms gap per request
    s.token_times_ns = {s.t_first_token_ns, s.t_first_token_ns + 10 * kMs,
                        s.t_first_token_ns + (stall ? 310 : 20) * kMs};
    samples.push_back(s);
  }
  SlaSpec s;
  s.bounds = {{SlaMetric::kItl, 50, 100}};
  const auto c = windowed_compliance(samples, s, {0, 60 * kSec, 30 * kSec});
  EXPECT_TRUE(c.windows[0].bounds[0].held);
  EXPECT_DOUBLE_EQ(*c.windows[0].bounds[0].measured_ns, 10.0 * kMs);
  EXPECT_FALSE(c.windows[1].bounds[0].held);  // median of {10, 300} gaps pooled = 155 ms
  // Without token times there is no ITL data in a window.
  for (auto& x : samples) x.token_times_ns.clear();
  const auto none = windowed_compliance(samples, s, {0, 60 * kSec, 30 * kSec});
  EXPECT_FALSE(none.windows[0].bounds[0].measured_ns.has_value());
  EXPECT_EQ(none.bounds[0].windows_with_data, 0u);
}

TEST(WindowedTimeline, FixedAndSliding) {
  const auto samples = samples_with_slow_middle();
  const auto fixed =
      windowed_p95_ttft(samples, {0, 90 * kSec, 30 * kSec}, TtftDefinition::kIntended);
  ASSERT_EQ(fixed.size(), 3u);
  EXPECT_EQ(fixed[0].count, 300u);
  EXPECT_DOUBLE_EQ(*fixed[0].p95_ttft_ns, 201.0 * kMs);
  EXPECT_DOUBLE_EQ(*fixed[1].p95_ttft_ns, 2001.0 * kMs);
  const auto service =
      windowed_p95_ttft(samples, {0, 90 * kSec, 30 * kSec}, TtftDefinition::kService);
  EXPECT_DOUBLE_EQ(*service[0].p95_ttft_ns, 200.0 * kMs);

  const auto sliding =
      windowed_p95_ttft(samples, {0, 90 * kSec, 10 * kSec}, TtftDefinition::kIntended, 5 * kSec);
  ASSERT_EQ(sliding.size(), 17u);  // starts 0, 5, ..., 80
  EXPECT_EQ(sliding.back().start_ns, 80 * kSec);
  EXPECT_DOUBLE_EQ(*sliding[6].p95_ttft_ns, 2001.0 * kMs);  // [30, 40)
  // A window with no requests has no P95.
  const auto empty =
      windowed_p95_ttft(samples, {200 * kSec, 230 * kSec, 30 * kSec}, TtftDefinition::kIntended);
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].count, 0u);
  EXPECT_FALSE(empty[0].p95_ttft_ns.has_value());
}

}  // namespace
}  // namespace llmcap::analysis
