// Request-count windows (StepSpec::window_requests, docs/plans.md "Request-count steps") against
// tests/fakes/scripted_target: a closed-loop and an open-loop step measure exactly N intended
// requests in their window, the window is a window in time (rates = N / its length), and
// duration_s still stops a step that cannot reach N.
#include <gtest/gtest.h>

#include "agent/step_runner.h"
#include "analysis/step_stats.h"
#include "tests/fakes/scripted_target.h"

namespace llmcap::agent {
namespace {

using fakes::Script;
using fakes::ScriptedTarget;

Script quick_script() {
  Script s;
  s.ttft_us = 4'000;
  s.itl_us = 1'000;
  s.tokens = 4;
  return s;
}

StepSpec request_spec(const ScriptedTarget& fake, std::int64_t requests, double cap_s) {
  StepSpec s;
  s.target.base_url = fake.base_url();
  s.target.model = "scripted-model";
  s.workload.input_tokens = analysis::LengthDistribution::fixed(16);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(4);
  s.workload.calibrate = false;
  s.deadlines.first_token_ms = 5000;
  s.deadlines.idle_ms = 5000;
  s.warmup_s = 0.05;
  s.duration_s = cap_s;
  s.window_requests = requests;
  return s;
}

// Requests intended in the result's window, and the step statistics over it.
std::size_t intended_in_window(const StepResult& r) {
  std::size_t n = 0;
  for (const auto& s : r.samples)
    if (s.t_intended_ns >= r.window_start_ns && s.t_intended_ns < r.window_end_ns) ++n;
  return n;
}

analysis::StepStats stats_of(const StepResult& r, double rate_rps) {
  analysis::StepInput in;
  in.samples = r.samples;
  in.window_start_ns = r.window_start_ns;
  in.window_end_ns = r.window_end_ns;
  in.offered_rate_rps = rate_rps;
  in.dropped_arrivals = r.dropped_arrivals;
  return analysis::compute_step_stats(in);
}

TEST(AgentRequestWindow, ClosedLoopWindowHoldsExactlyNAndEndsAtTheNextStart) {
  ScriptedTarget fake(quick_script());
  for (const std::int32_t concurrency : {1, 3, 8}) {
    StepSpec spec = request_spec(fake, 20, 30);
    spec.load.kind = LoadKind::kClosed;
    spec.load.concurrency = concurrency;
    const StepResult r = StepRunner{}.run(spec);
    ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
    ASSERT_TRUE(r.completed);
    EXPECT_EQ(intended_in_window(r), 20u) << "c=" << concurrency;
    const auto st = stats_of(r, 0);
    EXPECT_EQ(st.intended, 20u);
    EXPECT_EQ(st.completed_ok, 20u);  // drained: every measured request finished
    // Ended on its count, long before the 30 s cap, and nothing was sent after it.
    EXPECT_LT(r.window_end_ns - r.window_start_ns, 5'000'000'000);
    std::int64_t last_in_window = 0;
    for (const auto& s : r.samples) {
      EXPECT_LT(s.t_intended_ns, r.window_end_ns);
      if (s.t_intended_ns >= r.window_start_ns)
        last_in_window = std::max(last_in_window, s.t_intended_ns);
    }
    // The window ends when a slot frees after the N-th start (the (N+1)-th would start then),
    // not at the N-th start itself: N / length is the rate, without an N / (N−1) bias.
    EXPECT_GT(r.window_end_ns, last_in_window);
  }
}

TEST(AgentRequestWindow, ClosedLoopStopsAtItsCap) {
  ScriptedTarget fake(quick_script());
  StepSpec spec = request_spec(fake, 100'000, 0.2);
  spec.load.kind = LoadKind::kClosed;
  spec.load.concurrency = 2;
  const StepResult r = StepRunner{}.run(spec);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.window_end_ns - r.window_start_ns, 200'000'000);
  EXPECT_GT(intended_in_window(r), 0u);
  EXPECT_LT(intended_in_window(r), 100'000u);
}

TEST(AgentRequestWindow, OpenLoopWindowIsNOverRateAndHoldsExactlyN) {
  ScriptedTarget fake(quick_script());
  for (const auto arrival :
       {InterArrival::kPoisson, InterArrival::kConstant, InterArrival::kGamma}) {
    StepSpec spec = request_spec(fake, 30, 30);
    spec.load.kind = LoadKind::kOpen;
    spec.load.rate = RateProfile::constant(150);
    spec.load.inter_arrival = arrival;
    spec.load.burstiness = 0.5;
    EXPECT_NEAR(planned_window_s(spec), 0.2, 1e-9);
    const StepResult r = StepRunner{}.run(spec);
    ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
    ASSERT_TRUE(r.completed);
    EXPECT_EQ(intended_in_window(r), 30u) << to_string(arrival);
    EXPECT_EQ(r.window_end_ns - r.window_start_ns, 200'000'000);  // 30 / 150 rps
    const auto st = stats_of(r, 150);
    EXPECT_EQ(st.intended + st.dropped_arrivals, 30u);
    // N arrivals in N / rate seconds: the window offers exactly the planned rate (no partial
    // last second, no chance count); sends may trail their intended times by a little.
    EXPECT_NEAR(st.achieved_rate_rps, 150, 2 / 0.2) << to_string(arrival);
  }
  // The cap wins when N / rate is longer.
  StepSpec capped = request_spec(fake, 1000, 0.1);
  capped.load.kind = LoadKind::kOpen;
  capped.load.rate = RateProfile::constant(100);
  EXPECT_NEAR(planned_window_s(capped), 0.1, 1e-12);
}

}  // namespace
}  // namespace llmcap::agent
