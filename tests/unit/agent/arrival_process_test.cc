#include "agent/arrival_process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace llmcap::agent {
namespace {

constexpr std::int64_t kSec = 1'000'000'000;

std::vector<double> gaps_s(const std::vector<std::int64_t>& t) {
  std::vector<double> g;
  for (std::size_t i = 1; i < t.size(); ++i)
    g.push_back(static_cast<double>(t[i] - t[i - 1]) / 1e9);
  return g;
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double cv(const std::vector<double>& v) {
  const double m = mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1)) / m;
}

TEST(ArrivalProcess, PoissonMeanRateAndExponentialGaps) {
  ArrivalProcess a(RateProfile::constant(100), InterArrival::kPoisson, 1, 42);
  const auto t = a.until(1000 * kSec);  // ≈ 100000 arrivals
  const double rate = static_cast<double>(t.size()) / 1000.0;
  EXPECT_NEAR(rate, 100, 1.0);  // σ ≈ 0.32
  EXPECT_NEAR(cv(gaps_s(t)), 1.0, 0.02);
  for (std::size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
}

TEST(ArrivalProcess, ExactCountSegmentsCarryThePlannedCountAndKeepTheirShape) {
  // Issue 17: a 40 s window at 1.4 rps (56 planned) carried 46 Poisson arrivals in one run and
  // a step at the SLA boundary passed by that luck. With exact counts every window holds
  // round(rate × length) arrivals, for every seed; the gaps stay exponential (CV ≈ 1) or keep
  // their gamma burstiness.
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    ArrivalProcess a(RateProfile::constant(1.4), InterArrival::kPoisson, 1, seed);
    a.set_exact_count_segments({15, 55});
    const auto warm = a.until(15 * kSec);
    const auto window = a.until(55 * kSec);
    EXPECT_EQ(warm.size(), 21u) << seed;    // 1.4 × 15
    EXPECT_EQ(window.size(), 56u) << seed;  // 1.4 × 40
    for (const auto t : window) {
      EXPECT_GE(t, 15 * kSec);
      EXPECT_LT(t, 55 * kSec);
    }
    const auto after = a.until(100 * kSec);  // the free process continues afterwards
    EXPECT_GT(after.size(), 40u);
    EXPECT_LT(after.size(), 90u);
  }
  ArrivalProcess p(RateProfile::constant(100), InterArrival::kPoisson, 1, 7);
  p.set_exact_count_segments({1000});
  const auto t = p.until(1000 * kSec);
  EXPECT_EQ(t.size(), 100000u);
  EXPECT_NEAR(cv(gaps_s(t)), 1.0, 0.02);
  for (std::size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
  ArrivalProcess g(RateProfile::constant(100), InterArrival::kGamma, 0.25, 7);
  g.set_exact_count_segments({1000});
  const auto tg = g.until(1000 * kSec);
  EXPECT_EQ(tg.size(), 100000u);
  EXPECT_NEAR(cv(gaps_s(tg)), 2.0, 0.1);  // 1 / sqrt(0.25)
  // A ramp: the count follows the integral of the rate.
  ArrivalProcess r(RateProfile::ramp(0, 10, 20), InterArrival::kPoisson, 1, 3);
  r.set_exact_count_segments({20});
  EXPECT_EQ(r.until(20 * kSec).size(), 100u);
}

TEST(ArrivalProcess, SeededDeterminism) {
  ArrivalProcess a(RateProfile::constant(50), InterArrival::kPoisson, 1, 7);
  ArrivalProcess b(RateProfile::constant(50), InterArrival::kPoisson, 1, 7);
  ArrivalProcess c(RateProfile::constant(50), InterArrival::kPoisson, 1, 8);
  const auto ta = a.until(10 * kSec);
  EXPECT_EQ(ta, b.until(10 * kSec));
  EXPECT_NE(ta, c.until(10 * kSec));
}

TEST(ArrivalProcess, ConstantSpacingIsExact) {
  ArrivalProcess a(RateProfile::constant(200), InterArrival::kConstant, 1, 1);
  const auto t = a.until(kSec);
  EXPECT_NEAR(static_cast<double>(t.size()), 199, 1);  // 5 ms, 10 ms, ... 995 ms
  EXPECT_EQ(t.front(), 5'000'000);
  for (std::size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], 5'000'000, 1);
}

TEST(ArrivalProcess, GammaBurstinessSetsTheCoefficientOfVariation) {
  for (const double k : {0.25, 1.0, 4.0}) {
    ArrivalProcess a(RateProfile::constant(100), InterArrival::kGamma, k, 3);
    const auto t = a.until(500 * kSec);
    const auto g = gaps_s(t);
    EXPECT_NEAR(mean(g), 0.01, 0.0003) << k;            // rate unchanged by burstiness
    EXPECT_NEAR(cv(g), 1.0 / std::sqrt(k), 0.05) << k;  // CV = 1/sqrt(shape)
  }
}

TEST(ArrivalProcess, RampFollowsTheRate) {
  ArrivalProcess a(RateProfile::ramp(0, 200, 100), InterArrival::kPoisson, 1, 11);
  const auto t = a.until(100 * kSec);
  EXPECT_NEAR(static_cast<double>(t.size()), 10000, 300);  // ∫ = 10000, σ = 100
  std::size_t first_half = 0;
  for (auto x : t) first_half += x < 50 * kSec ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(first_half), 2500, 150);  // ∫0^50 = 2500
}

TEST(ArrivalProcess, BurstShape) {
  ArrivalProcess a(RateProfile::burst(20, 5, 10, 5), InterArrival::kConstant, 1, 1);
  const auto t = a.until(30 * kSec);
  std::size_t before = 0, during = 0, after = 0;
  for (auto x : t) {
    if (x < 10 * kSec)
      ++before;
    else if (x < 15 * kSec)
      ++during;
    else
      ++after;
  }
  EXPECT_NEAR(static_cast<double>(before), 200, 1);
  EXPECT_NEAR(static_cast<double>(during), 500, 1);
  EXPECT_NEAR(static_cast<double>(after), 300, 1);
}

TEST(ArrivalProcess, StepsAndZeroRate) {
  ArrivalProcess a(RateProfile::steps({{1, 0}, {1, 100}, {1, 0}}), InterArrival::kConstant, 1, 1);
  const auto t = a.until(10 * kSec);
  EXPECT_EQ(t.size(), 100u);
  EXPECT_GE(t.front(), kSec);
  EXPECT_LE(t.back(), 2 * kSec);
  EXPECT_FALSE(a.next().has_value());  // rate stays 0 forever
}

TEST(ArrivalProcess, UntilKeepsTheFirstLateArrival) {
  ArrivalProcess a(RateProfile::constant(10), InterArrival::kConstant, 1, 1);
  EXPECT_EQ(a.until(kSec / 2).size(), 4u);
  const auto n = a.next();
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 500'000'000);
}

TEST(ArrivalProcess, ParseNames) {
  EXPECT_EQ(parse_inter_arrival("gamma"), InterArrival::kGamma);
  EXPECT_FALSE(parse_inter_arrival("uniform").has_value());
  EXPECT_EQ(to_string(InterArrival::kConstant), "constant");
}

}  // namespace
}  // namespace llmcap::agent
