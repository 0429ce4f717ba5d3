#include "analysis/capacity.h"

#include <gtest/gtest.h>

namespace llmcap::analysis {
namespace {

JudgedStep open_step(double rate, Outcome o, bool confirm = false, double window_s = 60) {
  JudgedStep s;
  s.stats.offered_rate_rps = rate;
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
  s.confirm = confirm;
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

TEST(QualifiedCapacity, FailedConfirmDisqualifiesTheLevel) {
  const std::vector<JudgedStep> steps = {open_step(10, Outcome::kPass),
                                         open_step(12, Outcome::kPass),
                                         open_step(12, Outcome::kFail, true, 180)};
  const auto c = qualified_capacity(steps);
  EXPECT_DOUBLE_EQ(c.open_loop.point->offered_rate_rps, 10);
  EXPECT_FALSE(c.open_loop.point->confirmed);
}

TEST(QualifiedCapacity, InconclusiveStepsAreIgnored) {
  const std::vector<JudgedStep> steps = {open_step(10, Outcome::kInconclusive),
                                         open_step(10, Outcome::kPass),
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
