#include "sim/fault_injector.h"

#include <gtest/gtest.h>

#include <map>

namespace llmcap::sim {
namespace {

TEST(FaultInjectorTest, NoFaultsByDefault) {
  const FaultInjector f(FaultOptions{}, 7);
  for (std::uint64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(f.decide(i).kind, FaultKind::kNone);
    EXPECT_EQ(f.decide(i).slow_headers_ms, 0);
  }
}

TEST(FaultInjectorTest, RatesAreRoughlyHonouredAndSeeded) {
  FaultOptions o;
  o.error_rate = 0.1;
  o.rate_limit_rate = 0.2;
  o.reset_rate = 0.1;
  o.reset_after_tokens = 5;
  o.slow_headers_rate = 0.5;
  o.slow_headers_ms = 123;
  const FaultInjector f(o, 42);
  std::map<FaultKind, int> counts;
  int slow = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const FaultDecision d = f.decide(static_cast<std::uint64_t>(i));
    ++counts[d.kind];
    if (d.slow_headers_ms == 123) ++slow;
    if (d.kind == FaultKind::kReset) {
      EXPECT_EQ(d.after_tokens, 5);
    }
  }
  EXPECT_NEAR(counts[FaultKind::kServerError] / double(n), 0.1, 0.01);
  EXPECT_NEAR(counts[FaultKind::kRateLimited] / double(n), 0.2, 0.015);
  EXPECT_NEAR(counts[FaultKind::kReset] / double(n), 0.1, 0.01);
  EXPECT_EQ(counts[FaultKind::kStall], 0);
  EXPECT_NEAR(slow / double(n), 0.5, 0.02);
}

TEST(FaultInjectorTest, SameSeedSameDecisionsOtherSeedDiffers) {
  FaultOptions o;
  o.error_rate = 0.5;
  const FaultInjector a(o, 1), b(o, 1), c(o, 2);
  int differ = 0;
  for (std::uint64_t i = 0; i < 200; ++i) {
    EXPECT_EQ(a.decide(i).kind, b.decide(i).kind);
    if (a.decide(i).kind != c.decide(i).kind) ++differ;
  }
  EXPECT_GT(differ, 20);
}

TEST(FaultInjectorTest, CertainFault) {
  FaultOptions o;
  o.stall_rate = 1.0;
  o.stall_after_tokens = 3;
  const FaultDecision d = FaultInjector(o, 0).decide(9);
  EXPECT_EQ(d.kind, FaultKind::kStall);
  EXPECT_EQ(d.after_tokens, 3);
  EXPECT_EQ(to_string(d.kind), "stall");
}

}  // namespace
}  // namespace llmcap::sim
