#include "analysis/verdict.h"

#include <gtest/gtest.h>

namespace llmcap::analysis {
namespace {

constexpr double kMsD = 1e6;

Summary flat(double value_ns, std::uint64_t n = 600) {
  Summary s;
  s.count = n;
  s.mean = s.min = s.max = s.p50 = s.p90 = s.p95 = s.p99 = s.p999 = value_ns;
  return s;
}

// A healthy open-loop step: 10 rps for 60 s, all requests fine.
StepStats healthy() {
  StepStats st;
  st.window_s = 60;
  st.offered_rate_rps = 10;
  st.intended = st.sent = st.completed_ok = 600;
  st.ttft_ns = flat(500 * kMsD);
  st.ttft_service_ns = flat(300 * kMsD);
  st.tpot_ns = flat(20 * kMsD);
  st.e2e_ns = flat(3000 * kMsD);
  st.itl_ns.count = 60000;
  st.itl_ns.p50 = st.itl_ns.p90 = st.itl_ns.p95 = st.itl_ns.p99 = st.itl_ns.p999 = 25 * kMsD;
  st.requests_per_s = st.completion_rate_rps = st.achieved_rate_rps = 10;
  st.in_flight_slope_rps = 0.0;
  st.schedule_lag_p99_ns = 2 * kMsD;
  st.client_cpu_utilisation = 0.3;
  return st;
}

SlaSpec sla() {
  SlaSpec s;
  s.bounds = {{SlaMetric::kTtft, 95, 1000}, {SlaMetric::kTpot, 95, 35}};
  return s;
}

const VerdictReason& reason(const StepVerdict& v, std::string_view code) {
  for (const auto& r : v.reasons) {
    if (r.code == code) return r;
  }
  ADD_FAILURE() << "no reason " << code;
  static VerdictReason none;
  return none;
}

TEST(Verdict, HealthyStepPasses) {
  const StepVerdict v = judge_step(healthy(), sla());
  EXPECT_EQ(v.outcome, Outcome::kPass);
  const auto& ttft = reason(v, "ttft_p95");
  EXPECT_EQ(ttft.status, CheckStatus::kHeld);
  EXPECT_DOUBLE_EQ(*ttft.measured, 500);
  EXPECT_DOUBLE_EQ(ttft.limit, 1000);
  EXPECT_DOUBLE_EQ(*ttft.margin, 500);
  EXPECT_NE(ttft.text.find("from intended"), std::string::npos) << ttft.text;
  EXPECT_EQ(reason(v, "tpot_p95").status, CheckStatus::kHeld);
  EXPECT_TRUE(v.deciding().empty());
  // Bounds first in SLA order, then one reason per rule.
  ASSERT_EQ(v.reasons.size(), 2u + 11u);
  EXPECT_EQ(v.reasons[0].code, "ttft_p95");
  EXPECT_EQ(v.reasons[1].code, "tpot_p95");
}

TEST(Verdict, MissedBoundFailsWithNegativeMargin) {
  StepStats st = healthy();
  st.tpot_ns = flat(40 * kMsD);
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kFail);
  const auto& tpot = reason(v, "tpot_p95");
  EXPECT_EQ(tpot.status, CheckStatus::kMissed);
  EXPECT_DOUBLE_EQ(*tpot.margin, -5);
  ASSERT_EQ(v.deciding().size(), 1u);
  EXPECT_EQ(v.deciding()[0]->code, "tpot_p95");
}

TEST(Verdict, TtftDefinitionSelectsTheSummary) {
  StepStats st = healthy();
  st.ttft_ns = flat(1500 * kMsD);  // queueing visible from intended only
  SlaSpec s = sla();
  EXPECT_EQ(judge_step(st, s).outcome, Outcome::kFail);
  s.ttft_definition = TtftDefinition::kService;
  const StepVerdict v = judge_step(st, s);
  EXPECT_EQ(v.outcome, Outcome::kPass);
  EXPECT_DOUBLE_EQ(*reason(v, "ttft_p95").measured, 300);
  EXPECT_NE(reason(v, "ttft_p95").text.find("from send"), std::string::npos);
}

TEST(Verdict, ItlE2eAndServiceBoundsAndCodes) {
  SlaSpec s;
  s.bounds = {
      {SlaMetric::kItl, 99, 20}, {SlaMetric::kE2e, 99.9, 5000}, {SlaMetric::kTtftService, 50, 100}};
  const StepVerdict v = judge_step(healthy(), s);
  EXPECT_EQ(reason(v, "itl_p99").status, CheckStatus::kMissed);
  EXPECT_DOUBLE_EQ(*reason(v, "itl_p99").measured, 25);
  EXPECT_EQ(reason(v, "e2e_p99.9").status, CheckStatus::kHeld);
  EXPECT_EQ(reason(v, "ttft_service_p50").status, CheckStatus::kMissed);
  EXPECT_EQ(v.outcome, Outcome::kFail);
}

TEST(Verdict, BoundWithoutDataIsInconclusive) {
  StepStats st = healthy();
  st.tpot_ns = Summary{};
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(reason(v, "tpot_p95").status, CheckStatus::kNotEvaluated);
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
}

TEST(Verdict, ErrorRateAndIncompleteShare) {
  StepStats st = healthy();
  st.error_rate = 0.02;
  StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(reason(v, "error_rate").status, CheckStatus::kMissed);
  EXPECT_NEAR(*reason(v, "error_rate").margin, -0.01, 1e-12);
  st.error_rate = 0.01;  // at the limit holds
  EXPECT_EQ(judge_step(st, sla()).outcome, Outcome::kPass);
  st.incomplete_rate = 0.05;
  v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(reason(v, "incomplete_rate").status, CheckStatus::kMissed);
}

TEST(Verdict, CompletionRateBelowOfferedFails) {
  StepStats st = healthy();
  st.completion_rate_rps = 9.0;  // 10% short; tolerance max(5%, 3/√600 = 12.2%) → held
  EXPECT_EQ(judge_step(st, sla()).outcome, Outcome::kPass);
  st.offered_rate_rps = 100;  // 6000 expected: tolerance 5%
  st.achieved_rate_rps = 100;
  st.completion_rate_rps = 90;
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(reason(v, "completion_rate").status, CheckStatus::kMissed);
  EXPECT_DOUBLE_EQ(reason(v, "completion_rate").limit, 95);
}

TEST(Verdict, GrowingBacklogFails) {
  StepStats st = healthy();
  st.in_flight_slope_rps = 0.5;  // 30 requests more over the window; limit 0.02 × 10 = 0.2
  StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(reason(v, "backlog").status, CheckStatus::kMissed);
  // Slope above the fraction but only 2.4 requests net growth: noise, held.
  st.in_flight_slope_rps = 0.04;
  st.offered_rate_rps = 1;
  st.achieved_rate_rps = st.completion_rate_rps = 1;
  v = judge_step(st, sla());
  EXPECT_EQ(reason(v, "backlog").status, CheckStatus::kHeld);
  EXPECT_EQ(v.outcome, Outcome::kPass);
  // No in-flight series: not evaluated, does not block a pass.
  st = healthy();
  st.in_flight_slope_rps.reset();
  v = judge_step(st, sla());
  EXPECT_EQ(reason(v, "backlog").status, CheckStatus::kNotEvaluated);
  EXPECT_EQ(v.outcome, Outcome::kPass);
}

TEST(Verdict, ATrendOverTooFewRequestLifetimesIsJudgedAgainOverALongerWindow) {
  // Requests that live 20 s in a 60 s window: three lifetimes, where a batching server's count
  // still approaching its level rises as a backlog does.
  StepStats st = healthy();
  st.e2e_ns = flat(20000 * kMsD);
  st.in_flight_slope_rps = 1.0;  // 60 more over the window; limit 0.2 req/s
  StepVerdict v = judge_step(st, sla());
  ASSERT_EQ(v.outcome, Outcome::kFail);
  ASSERT_EQ(reason(v, "backlog").status, CheckStatus::kMissed);
  ASSERT_TRUE(trend_judging_window_s(st, v).has_value());
  // 5 lifetimes (100 s) or twice the window (120 s), whichever is longer.
  EXPECT_DOUBLE_EQ(*trend_judging_window_s(st, v), 120);
  EXPECT_TRUE(defer_short_trend(st, v, 3600));
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_FALSE(v.client_bound);
  ASSERT_TRUE(v.rejudge_window_s.has_value());
  EXPECT_DOUBLE_EQ(*v.rejudge_window_s, 120);
  EXPECT_EQ(reason(v, "backlog").status, CheckStatus::kNotEvaluated);
  EXPECT_NE(reason(v, "backlog").text.find("judged again over 120 s"), std::string::npos)
      << reason(v, "backlog").text;
  // The window it may run is capped by the phase's max_duration_s ...
  v = judge_step(st, sla());
  EXPECT_TRUE(defer_short_trend(st, v, 80));
  EXPECT_DOUBLE_EQ(*v.rejudge_window_s, 80);
  // ... and a window that cannot grow by 10 % keeps its verdict.
  v = judge_step(st, sla());
  EXPECT_FALSE(defer_short_trend(st, v, 65));
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_FALSE(v.rejudge_window_s.has_value());
  // A pass over three lifetimes is no better evidence: an overloaded queue's growth hides in the
  // noise of so short a trend (the twin at 1.3 × capacity passed such a step).
  st.in_flight_slope_rps = 0.0;
  v = judge_step(st, sla());
  ASSERT_EQ(v.outcome, Outcome::kPass);
  EXPECT_TRUE(defer_short_trend(st, v, 3600));
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_DOUBLE_EQ(*v.rejudge_window_s, 120);
  // Requests of 45 s in a 60 s window: 5 lifetimes (225 s) is the longer.
  st.e2e_ns = flat(45000 * kMsD);
  v = judge_step(st, sla());
  EXPECT_DOUBLE_EQ(*trend_judging_window_s(st, v), 225);
}

TEST(Verdict, AFailOnALatencyBoundOrOverEnoughLifetimesStands) {
  StepStats st = healthy();
  st.e2e_ns = flat(20000 * kMsD);
  st.in_flight_slope_rps = 1.0;
  st.ttft_ns = flat(1500 * kMsD);  // a bound missed: a window still filling understates latency
  StepVerdict v = judge_step(st, sla());
  ASSERT_EQ(v.outcome, Outcome::kFail);
  EXPECT_FALSE(trend_judging_window_s(st, v).has_value());
  EXPECT_FALSE(defer_short_trend(st, v, 3600));
  EXPECT_EQ(v.outcome, Outcome::kFail);
  // Requests of 3 s in a 60 s window: 20 lifetimes, the trend decides either way.
  st = healthy();
  st.in_flight_slope_rps = 1.0;
  v = judge_step(st, sla());
  ASSERT_EQ(v.outcome, Outcome::kFail);
  EXPECT_FALSE(defer_short_trend(st, v, 3600));
  EXPECT_EQ(v.outcome, Outcome::kFail);
  st.in_flight_slope_rps = 0.0;
  v = judge_step(st, sla());
  ASSERT_EQ(v.outcome, Outcome::kPass);
  EXPECT_FALSE(defer_short_trend(st, v, 3600));
  // Closed loop has no trend to judge.
  st = healthy();
  st.e2e_ns = flat(20000 * kMsD);
  st.offered_rate_rps = 0;
  v = judge_step(st, sla());
  EXPECT_FALSE(defer_short_trend(st, v, 3600));
}

TEST(Verdict, ClientBottlenecksAreInconclusive) {
  {
    StepStats st = healthy();
    st.achieved_rate_rps = 7;  // the agent did not send the load
    const StepVerdict v = judge_step(st, sla());
    EXPECT_EQ(v.outcome, Outcome::kInconclusive);
    EXPECT_EQ(reason(v, "send_rate").status, CheckStatus::kMissed);
  }
  {
    StepStats st = healthy();
    st.schedule_lag_p99_ns = 80 * kMsD;
    const StepVerdict v = judge_step(st, sla());
    EXPECT_EQ(v.outcome, Outcome::kInconclusive);
    EXPECT_DOUBLE_EQ(*reason(v, "schedule_lag").measured, 80);
    EXPECT_DOUBLE_EQ(*reason(v, "schedule_lag").margin, -30);
  }
  {
    StepStats st = healthy();
    st.dropped_arrivals = 3;
    const StepVerdict v = judge_step(st, sla());
    EXPECT_EQ(v.outcome, Outcome::kInconclusive);
    EXPECT_EQ(reason(v, "dropped_arrivals").status, CheckStatus::kMissed);
  }
  {
    StepStats st = healthy();
    st.client_cpu_utilisation = 0.97;
    const StepVerdict v = judge_step(st, sla());
    EXPECT_EQ(v.outcome, Outcome::kInconclusive);
    EXPECT_EQ(reason(v, "client_cpu").status, CheckStatus::kMissed);
  }
  {
    StepStats st = healthy();
    st.client_cpu_utilisation = 0.97;
    const StepVerdict v = judge_step(st, sla());
    EXPECT_TRUE(v.client_bound);
    EXPECT_FALSE(v.insufficient_samples);
  }
}

TEST(Verdict, ASimulatorThatFellBehindRealTimeMakesTheStepInconclusive) {
  StepStats st = healthy();
  st.target_clock_lost_share = 0.002;  // 0.2 % of the window: noise
  EXPECT_EQ(judge_step(st, sla()).outcome, Outcome::kPass);
  st.target_clock_lost_share = 0.05;  // the host could not keep the simulated GPU in real time
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_TRUE(v.client_bound);
  EXPECT_EQ(reason(v, "target_clock").status, CheckStatus::kMissed);
}

TEST(Verdict, ClientResourceFailuresMakeTheStepInconclusiveNeverPassOrFail) {
  StepStats st = healthy();
  EXPECT_EQ(reason(judge_step(st, sla()), "client_resources").status, CheckStatus::kHeld);
  EXPECT_TRUE(is_client_side(CheckKind::kClientResources));
  st.client_resources_in_step = 1472;
  st.client_resources_example =
      "client resources exhausted: connect to 127.0.0.1:8000 failed with EMFILE (Too many open "
      "files); raise the agent's descriptor limit (ulimit -n) or lower the concurrency";
  StepVerdict v = judge_step(st, sla());  // every other check held: no pass
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_TRUE(v.client_bound);
  const auto& r = reason(v, "client_resources");
  EXPECT_EQ(r.status, CheckStatus::kMissed);
  EXPECT_EQ(r.text,
            "client resources exhausted: 1472 request(s) of the step failed on the client and "
            "never reached the target (first: connect to 127.0.0.1:8000 failed with EMFILE (Too "
            "many open files); raise the agent's descriptor limit (ulimit -n) or lower the "
            "concurrency)");
  // A latency bound missed far beyond the client's dispatch lag would fail the step (rule 1);
  // not when the client could not offer the load at all.
  st.ttft_ns = flat(45'000 * kMsD);
  v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_TRUE(v.client_bound);
  EXPECT_FALSE(reason(v, "ttft_p95").beyond_client_lag);
  // ... and a target error rate beyond the SLA does not fail it either.
  st.ttft_ns = flat(500 * kMsD);
  st.error_rate = 0.5;
  EXPECT_EQ(judge_step(st, sla()).outcome, Outcome::kInconclusive);
}

TEST(Verdict, TooFewRequestsIsInsufficientSamplesNotClientBound) {
  StepStats st = healthy();
  st.intended = 40;
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_EQ(reason(v, "sample_count").status, CheckStatus::kMissed);
  EXPECT_TRUE(v.insufficient_samples);
  EXPECT_FALSE(v.client_bound);
  EXPECT_FALSE(is_client_side(CheckKind::kSampleCount));
}

TEST(Verdict, ClientMissOverridesAServerMissTheClientLagExplains) {
  StepStats st = healthy();
  st.ttft_ns = flat(5000 * kMsD);        // would fail by 4 s ...
  st.schedule_lag_p99_ns = 4000 * kMsD;  // ... but the client was late by seconds
  st.client_lag_max_ns = 4500 * kMsD;
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_TRUE(v.client_bound);
  EXPECT_FALSE(reason(v, "ttft_p95").beyond_client_lag);
}

TEST(Verdict, AMissBeyondWhatTheClientLagExplainsFails) {
  // P95 TTFT 45.9 s against 800 ms while the client's lag was 80 ms: no client delay explains
  // a 45 s miss, so the target failed, client-bound or not.
  StepStats st = healthy();
  SlaSpec s = sla();
  s.bounds[0].limit_ms = 800;
  st.ttft_ns = flat(45'900 * kMsD);
  st.schedule_lag_p99_ns = 80 * kMsD;  // client check missed (> 50 ms)
  st.client_lag_max_ns = 120 * kMsD;
  const StepVerdict v = judge_step(st, s);
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_FALSE(v.client_bound);
  EXPECT_EQ(reason(v, "schedule_lag").status, CheckStatus::kMissed);
  EXPECT_TRUE(reason(v, "ttft_p95").beyond_client_lag);
  EXPECT_NE(reason(v, "ttft_p95").text.find("not explained by the client"), std::string::npos);
  EXPECT_EQ(v.missed_server_codes(), std::vector<std::string>{"ttft_p95"});
}

TEST(Verdict, ABusyHostOrSimulatorKeepsABigMissInconclusive) {
  // The same 45 s miss, but the client was short of CPU (it reads late, which the dispatch lag
  // does not measure) or the simulator lost wall-clock time (it answered late): the miss may be
  // the host's, so the step is inconclusive, never a fail the target did not earn.
  StepStats st = healthy();
  SlaSpec s = sla();
  s.bounds[0].limit_ms = 800;
  st.ttft_ns = flat(45'900 * kMsD);
  st.client_lag_max_ns = 120 * kMsD;
  for (int which = 0; which < 2; ++which) {
    StepStats busy = st;
    if (which == 0)
      busy.client_cpu_utilisation = 0.99;
    else
      busy.target_clock_lost_share = 0.2;
    const StepVerdict v = judge_step(busy, s);
    EXPECT_EQ(v.outcome, Outcome::kInconclusive) << which;
    EXPECT_TRUE(v.client_bound) << which;
    EXPECT_FALSE(reason(v, "ttft_p95").beyond_client_lag) << which;
  }
}

TEST(Verdict, UnmeasuredClientFiguresAreNotApplicable) {
  StepStats st = healthy();
  st.client_cpu_utilisation.reset();
  st.schedule_lag_p99_ns.reset();
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(reason(v, "client_cpu").status, CheckStatus::kNotApplicable);
  EXPECT_EQ(reason(v, "schedule_lag").status, CheckStatus::kNotApplicable);
  EXPECT_EQ(v.outcome, Outcome::kPass);
}

TEST(Verdict, ClosedLoopSkipsRateAndBacklogChecks) {
  StepStats st = healthy();
  st.offered_rate_rps = 0;
  st.concurrency = 16;
  st.achieved_rate_rps = 3;  // meaningless in closed loop
  st.in_flight_slope_rps = 5;
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kPass);
  EXPECT_EQ(reason(v, "send_rate").status, CheckStatus::kNotApplicable);
  EXPECT_EQ(reason(v, "completion_rate").status, CheckStatus::kNotApplicable);
  EXPECT_EQ(reason(v, "backlog").status, CheckStatus::kNotApplicable);
}

TEST(Verdict, NoRequestsIsInconclusive) {
  StepStats st;
  st.window_s = 60;
  st.offered_rate_rps = 10;
  const StepVerdict v = judge_step(st, sla());
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_EQ(reason(v, "error_rate").status, CheckStatus::kNotEvaluated);
}

TEST(Verdict, StableNames) {
  EXPECT_EQ(to_string(Outcome::kPass), "pass");
  EXPECT_EQ(to_string(Outcome::kFail), "fail");
  EXPECT_EQ(to_string(Outcome::kInconclusive), "inconclusive");
  EXPECT_EQ(to_string(CheckKind::kDroppedArrivals), "dropped_arrivals");
  EXPECT_EQ(to_string(CheckStatus::kNotEvaluated), "not_evaluated");
  EXPECT_TRUE(is_client_side(CheckKind::kClientCpu));
  EXPECT_FALSE(is_client_side(CheckKind::kBacklog));
}

}  // namespace
}  // namespace llmcap::analysis
