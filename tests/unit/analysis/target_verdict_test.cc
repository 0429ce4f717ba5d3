#include "analysis/target_verdict.h"

#include <gtest/gtest.h>

namespace llmcap::analysis {
namespace {

JudgedStep step(double rate, Outcome o, StepRole role = StepRole::kLevel) {
  JudgedStep s;
  s.planned_rate_rps = rate;
  s.stats.offered_rate_rps = rate;
  s.stats.window_s = role == StepRole::kLevel ? 4 : 12;
  s.stats.output_tokens_per_s = rate * 100;
  s.outcome = o;
  s.role = role;
  return s;
}

StepVerdict verdict_of(Outcome o, std::string missed = "") {
  StepVerdict v;
  v.outcome = o;
  if (!missed.empty()) {
    VerdictReason r;
    r.kind = missed == "error_rate" ? CheckKind::kErrorRate : CheckKind::kBound;
    r.status = CheckStatus::kMissed;
    r.code = missed;
    v.reasons.push_back(r);
  }
  return v;
}

struct Steps {
  std::vector<JudgedStep> steps;
  std::vector<StepVerdict> verdicts;
  void add(double rate, Outcome o, StepRole role = StepRole::kLevel, std::string missed = "") {
    steps.push_back(step(rate, o, role));
    verdicts.push_back(verdict_of(o, o == Outcome::kFail && missed.empty() ? "ttft_p95" : missed));
  }
  TargetVerdict judge() const { return judge_target(steps, verdicts, qualified_capacity(steps)); }
};

TEST(TargetVerdict, AConfirmedRatePasses) {
  Steps r;
  r.add(5, Outcome::kPass);
  r.add(10, Outcome::kFail);
  r.add(7.5, Outcome::kPass);
  r.add(7.5, Outcome::kFail, StepRole::kConfirm);
  r.add(7.125, Outcome::kPass, StepRole::kConfirm);
  const TargetVerdict v = r.judge();
  EXPECT_EQ(v.outcome, Outcome::kPass);
  EXPECT_EQ(v.basis, "open_loop");
  EXPECT_EQ(v.failures.size(), 2u);
}

TEST(TargetVerdict, EveryConfirmFailedIsNoQualifiedRateNamingTheBoundAndTheRates) {
  // The `make demo` A100 case: short passes, then failed confirms at 7.38 and 7.01. No rate
  // qualifies (never a PASS), but the SLA was not shown to fail everywhere: a lucky short pass
  // at the SLA boundary or a search out of steps must not read as "this server fails".
  Steps r;
  r.add(7.01, Outcome::kPass);
  r.add(7.38, Outcome::kPass);
  r.add(8, Outcome::kFail);
  r.add(7.38, Outcome::kFail, StepRole::kConfirm);
  r.add(7.01, Outcome::kFail, StepRole::kConfirm, "tpot_p95");
  const TargetVerdict v = r.judge();
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_NE(v.outcome, Outcome::kPass);
  // Confirms first: they decided it.
  EXPECT_EQ(v.statement.rfind("no confirmed rate: ttft_p95 failed at 7.38 rps (confirm); "
                              "tpot_p95 failed at 7.01 rps (confirm); ttft_p95 failed at 8.00 rps",
                              0),
            0u)
      << v.statement;
  EXPECT_EQ(v.failures.size(), 3u);
}

TEST(TargetVerdict, FailingFromTheLowestRateIsAFail) {
  Steps r;
  r.add(1, Outcome::kFail, StepRole::kLevel, "error_rate");
  r.add(0.5, Outcome::kFail, StepRole::kLevel, "error_rate");
  const TargetVerdict v = r.judge();
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_NE(v.statement.find("error_rate failed at 1.00 rps"), std::string::npos) << v.statement;
}

TEST(TargetVerdict, AFailAboveRatesThatCouldNotBeJudgedIsInconclusive) {
  // Issue 32, case 1: 1.85 rps failed, every lower rate held too few requests. The SLA was
  // never shown to fail where it was judged thin: inconclusive, not FAIL.
  Steps r;
  r.add(1.85, Outcome::kFail);
  r.add(0.93, Outcome::kInconclusive);
  r.verdicts.back().insufficient_samples = true;
  r.add(0.46, Outcome::kInconclusive);
  r.verdicts.back().insufficient_samples = true;
  const TargetVerdict v = r.judge();
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_EQ(v.insufficient_sample_steps, 2);
  EXPECT_NE(v.statement.find("lower levels could not be judged"), std::string::npos) << v.statement;
  // An inconclusive step ABOVE the lowest fail leaves it a fail.
  Steps above;
  above.add(1, Outcome::kFail);
  above.add(0.5, Outcome::kFail);
  above.add(2, Outcome::kInconclusive);
  EXPECT_EQ(above.judge().outcome, Outcome::kFail);
}

TEST(TargetVerdict, UnconfirmedPassesAreInconclusiveNeverAPass) {
  Steps r;
  r.add(2, Outcome::kPass);
  r.add(4, Outcome::kPass);
  r.add(8, Outcome::kFail);  // a short fail above: still no confirm failed
  const TargetVerdict v = r.judge();
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_NE(v.statement.find("best evidence ≥ 4.00 rps short-step pass, not confirmed"),
            std::string::npos)
      << v.statement;
}

TEST(TargetVerdict, ClientBoundAndThinStepsAreCountedApart) {
  Steps r;
  r.add(2, Outcome::kInconclusive);
  r.verdicts.back().client_bound = true;
  r.add(2, Outcome::kInconclusive);
  r.verdicts.back().insufficient_samples = true;
  const TargetVerdict v = r.judge();
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_EQ(v.client_bound_steps, 1);
  EXPECT_EQ(v.insufficient_sample_steps, 1);
}

TEST(TargetVerdict, AConcurrencySweepAloneIsJudgedClosedLoop) {
  Steps r;
  JudgedStep c4;
  c4.stats.concurrency = 4;
  c4.outcome = Outcome::kPass;
  r.steps.push_back(c4);
  r.verdicts.push_back(verdict_of(Outcome::kPass));
  const TargetVerdict v = r.judge();
  EXPECT_EQ(v.outcome, Outcome::kPass);
  EXPECT_EQ(v.basis, "closed_loop");
}

TEST(TargetVerdict, Overall) {
  TargetVerdict pass, fail, inc;
  pass.outcome = Outcome::kPass;
  fail.outcome = Outcome::kFail;
  inc.outcome = Outcome::kInconclusive;
  EXPECT_EQ(overall_outcome(std::vector<TargetVerdict>{pass, pass}), Outcome::kPass);
  EXPECT_EQ(overall_outcome(std::vector<TargetVerdict>{pass, inc}), Outcome::kInconclusive);
  EXPECT_EQ(overall_outcome(std::vector<TargetVerdict>{inc, fail}), Outcome::kFail);
  EXPECT_EQ(overall_outcome(std::vector<TargetVerdict>{}), Outcome::kInconclusive);
}

}  // namespace
}  // namespace llmcap::analysis
