#include "analysis/capacity.h"

#include <gtest/gtest.h>

namespace llmcap::analysis {
namespace {

JudgedStep open_step(double rate, Outcome o, bool confirm = false, double window_s = 60) {
  JudgedStep s;
  s.planned_rate_rps = rate;
  // The rate recomputed over a window differs from the plan's in its last bits (and more for
  // Poisson arrivals): levels must never be keyed by it.
  s.stats.offered_rate_rps = rate * (1 + 1e-12 * window_s);
  s.stats.achieved_rate_rps = rate * 0.97;
  s.stats.window_s = window_s;
  s.stats.output_tokens_per_s = rate * 100 + (confirm ? 1 : 0);  // tells steps apart
  s.stats.input_tokens_per_s = rate * 200;
  s.stats.requests_per_s = rate;
  s.stats.ttft_ns.count = 10;
  s.stats.ttft_ns.p50 = 100e6;
  s.stats.ttft_ns.p95 = rate * 10e6;
  s.stats.ttft_ns.p99 = rate * 20e6;
  s.stats.tpot_ns.p95 = 30e6;
  s.stats.e2e_ns.p99 = 9e9;
  s.stats.error_rate = 0.001;
  s.outcome = o;
  s.role = confirm ? StepRole::kConfirm : StepRole::kLevel;
  return s;
}

JudgedStep closed_step(int n, Outcome o) {
  JudgedStep s;
  s.stats.concurrency = n;
  s.stats.window_s = 60;
  s.stats.output_tokens_per_s = n * 50;
  s.outcome = o;
  return s;
}

TEST(QualifiedCapacity, HighestPassingRateWithFiguresFromTheConfirm) {
  const std::vector<JudgedStep> steps = {
      open_step(5, Outcome::kPass),  open_step(10, Outcome::kPass),
      open_step(20, Outcome::kFail), open_step(15, Outcome::kFail),
      open_step(12, Outcome::kPass), open_step(12, Outcome::kPass, true, 180)};
  const auto c = qualified_capacity(steps);
  ASSERT_TRUE(c.open_loop.point.has_value());
  const auto& p = *c.open_loop.point;
  EXPECT_DOUBLE_EQ(p.offered_rate_rps, 12);
  EXPECT_TRUE(p.confirmed);
  EXPECT_FALSE(p.non_monotonic);
  EXPECT_DOUBLE_EQ(p.output_tokens_per_s, 1201);  // from the 180 s confirm step
  EXPECT_DOUBLE_EQ(p.input_tokens_per_s, 2400);
  EXPECT_DOUBLE_EQ(p.ttft_p95_ns, 120e6);
  EXPECT_DOUBLE_EQ(p.ttft_p99_ns, 240e6);
  EXPECT_DOUBLE_EQ(p.tpot_p95_ns, 30e6);
  EXPECT_DOUBLE_EQ(p.e2e_p99_ns, 9e9);
  EXPECT_DOUBLE_EQ(p.error_rate, 0.001);
  EXPECT_EQ(c.open_loop.steps_considered, 6u);
  EXPECT_FALSE(c.closed_loop.point.has_value());
  EXPECT_EQ(c.closed_loop.statement, "no passing step among 0 closed-loop steps");
}

TEST(QualifiedCapacity, FailedConfirmDisqualifiesTheLevelAndShortPassesNeverQualify) {
  // A short pass at 12, its confirm at 12 fails, the confirm at 11.4 passes: the capacity is
  // 11.4, never 12 (the short step at 12 and its failed confirm are one level).
  const std::vector<JudgedStep> steps = {
      open_step(10, Outcome::kPass), open_step(12, Outcome::kPass, false, 4),
      open_step(12, Outcome::kFail, true, 6), open_step(11.4, Outcome::kPass, true, 6)};
  const auto c = qualified_capacity(steps);
  ASSERT_TRUE(c.open_loop.point.has_value());
  EXPECT_DOUBLE_EQ(c.open_loop.point->offered_rate_rps, 11.4);
  EXPECT_DOUBLE_EQ(c.open_loop.point->achieved_rate_rps, 11.4 * 0.97);
  EXPECT_TRUE(c.open_loop.point->confirmed);
}

TEST(QualifiedCapacity, WithoutAPassingConfirmThereIsOnlyBestEvidence) {
  const std::vector<JudgedStep> steps = {
      open_step(7.01, Outcome::kPass, false, 4), open_step(7.38, Outcome::kPass, false, 4),
      open_step(7.38, Outcome::kFail, true, 12), open_step(7.01, Outcome::kFail, true, 12)};
  const auto c = qualified_capacity(steps);
  EXPECT_FALSE(c.open_loop.point.has_value());
  EXPECT_FALSE(c.open_loop.best_evidence.has_value());  // both levels failed their confirm
  const std::vector<JudgedStep> unconfirmed = {
      open_step(5, Outcome::kPass), open_step(7.01, Outcome::kPass), open_step(8, Outcome::kFail)};
  const auto u = qualified_capacity(unconfirmed);
  EXPECT_FALSE(u.open_loop.point.has_value());
  ASSERT_TRUE(u.open_loop.best_evidence.has_value());
  EXPECT_DOUBLE_EQ(u.open_loop.best_evidence->offered_rate_rps, 7.01);
  EXPECT_NE(u.open_loop.statement.find("best evidence ≥ 7.01 rps short-step pass, not confirmed"),
            std::string::npos)
      << u.open_loop.statement;
}

TEST(QualifiedCapacity, AFailedSoakDisqualifiesTheConfirmedRateAndBurstsAreNoLevel) {
  JudgedStep soak = open_step(9, Outcome::kFail, false, 600);
  soak.role = StepRole::kSoak;
  JudgedStep burst = open_step(30, Outcome::kPass, false, 60);
  burst.role = StepRole::kExcluded;
  const std::vector<JudgedStep> steps = {open_step(9, Outcome::kPass, true, 180), soak, burst};
  const auto c = qualified_capacity(steps);
  EXPECT_FALSE(c.open_loop.point.has_value());
  EXPECT_EQ(c.open_loop.steps_considered, 2u);
  JudgedStep passing_soak = soak;
  passing_soak.outcome = Outcome::kPass;
  const std::vector<JudgedStep> soaked = {open_step(9, Outcome::kPass), passing_soak};
  const auto s = qualified_capacity(soaked);
  ASSERT_TRUE(s.open_loop.point.has_value());  // a passing soak confirms its rate
  EXPECT_DOUBLE_EQ(s.open_loop.point->offered_rate_rps, 9);
}

TEST(QualifiedCapacity, InconclusiveStepsAreIgnored) {
  const std::vector<JudgedStep> steps = {open_step(10, Outcome::kInconclusive),
                                         open_step(10, Outcome::kPass, true),
                                         open_step(30, Outcome::kInconclusive)};
  const auto c = qualified_capacity(steps);
  EXPECT_DOUBLE_EQ(c.open_loop.point->offered_rate_rps, 10);
}

TEST(QualifiedCapacity, NoPassingStepIsStated) {
  const std::vector<JudgedStep> steps = {open_step(1, Outcome::kFail), open_step(2, Outcome::kFail),
                                         open_step(4, Outcome::kInconclusive)};
  const auto c = qualified_capacity(steps);
  EXPECT_FALSE(c.open_loop.point.has_value());
  EXPECT_EQ(c.open_loop.statement, "no passing step among 3 open-loop steps");
}

TEST(QualifiedCapacity, ConcurrencySweepAndNonMonotonicFlag) {
  const std::vector<JudgedStep> steps = {
      closed_step(1, Outcome::kPass), closed_step(4, Outcome::kFail),
      closed_step(8, Outcome::kPass), closed_step(16, Outcome::kPass),
      closed_step(32, Outcome::kFail)};
  const auto c = qualified_capacity(steps);
  ASSERT_TRUE(c.closed_loop.point.has_value());
  EXPECT_EQ(c.closed_loop.point->concurrency, 16);
  EXPECT_DOUBLE_EQ(c.closed_loop.point->output_tokens_per_s, 800);
  EXPECT_TRUE(c.closed_loop.point->non_monotonic);  // 4 failed below 16
  EXPECT_NE(c.closed_loop.statement.find("a lower level failed"), std::string::npos);
  EXPECT_FALSE(c.open_loop.point.has_value());
}

}  // namespace
}  // namespace llmcap::analysis
