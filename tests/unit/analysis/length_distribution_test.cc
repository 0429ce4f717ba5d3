#include "analysis/length_distribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace llmcap::analysis {
namespace {

double sample_mean(LengthDistribution d, std::uint64_t seed, int n, std::int32_t* lo = nullptr,
                   std::int32_t* hi = nullptr) {
  LengthSampler s(std::move(d), seed);
  double sum = 0;
  std::int32_t mn = 1 << 30, mx = -1;
  for (int i = 0; i < n; ++i) {
    const auto v = s.next();
    sum += v;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
  }
  if (lo) *lo = mn;
  if (hi) *hi = mx;
  return sum / n;
}

TEST(LengthSampler, SeededReproducibility) {
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kLognormal;
  d.mean = 300;
  d.stddev = 150;
  LengthSampler a(d, 42), b(d, 42), c(d, 43);
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next();
    EXPECT_EQ(x, b.next());
    differ += x != c.next() ? 1 : 0;
  }
  EXPECT_GT(differ, 50);  // another seed gives another sequence
}

TEST(LengthSampler, Fixed) {
  LengthSampler s(LengthDistribution::fixed(128), 1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s.next(), 128);
  EXPECT_DOUBLE_EQ(LengthDistribution::fixed(128).nominal_mean(), 128);
}

TEST(LengthSampler, UniformBoundsAndMean) {
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kUniform;
  d.low = 100;
  d.high = 300;
  std::int32_t lo = 0, hi = 0;
  const double m = sample_mean(d, 5, 20000, &lo, &hi);
  EXPECT_EQ(lo, 100);
  EXPECT_EQ(hi, 300);
  EXPECT_NEAR(m, 200, 2);
  EXPECT_DOUBLE_EQ(d.nominal_mean(), 200);
}

TEST(LengthSampler, NormalAndLognormalMeans) {
  LengthDistribution n;
  n.kind = LengthDistribution::Kind::kNormal;
  n.mean = 512;
  n.stddev = 64;
  EXPECT_NEAR(sample_mean(n, 11, 20000), 512, 512 * 0.01);
  LengthDistribution ln;
  ln.kind = LengthDistribution::Kind::kLognormal;
  ln.mean = 240;
  ln.stddev = 120;
  EXPECT_NEAR(sample_mean(ln, 12, 50000), 240, 240 * 0.02);
}

TEST(LengthSampler, ClampsEveryDraw) {
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kNormal;
  d.mean = 100;
  d.stddev = 200;  // would go negative often
  d.min_tokens = 16;
  d.max_tokens = 180;
  std::int32_t lo = 0, hi = 0;
  sample_mean(d, 3, 5000, &lo, &hi);
  EXPECT_EQ(lo, 16);
  EXPECT_EQ(hi, 180);
  // Swapped clamp bounds are treated as the same interval, not undefined behaviour.
  std::swap(d.min_tokens, d.max_tokens);
  sample_mean(d, 3, 5000, &lo, &hi);
  EXPECT_EQ(lo, 16);
  EXPECT_EQ(hi, 180);
}

TEST(LengthSampler, EmpiricalDrawsFromTheList) {
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kEmpirical;
  d.values = {10, 20, 30};
  LengthSampler s(d, 9);
  int seen[3] = {0, 0, 0};
  for (int i = 0; i < 3000; ++i) {
    const auto v = s.next();
    ASSERT_TRUE(v == 10 || v == 20 || v == 30) << v;
    ++seen[v / 10 - 1];
  }
  for (int c : seen) EXPECT_GT(c, 800);
  EXPECT_DOUBLE_EQ(d.nominal_mean(), 20);
  LengthDistribution empty;
  empty.kind = LengthDistribution::Kind::kEmpirical;
  EXPECT_DOUBLE_EQ(empty.nominal_mean(), 0);
  EXPECT_EQ(to_string(LengthDistribution::Kind::kEmpirical), "empirical");
}

TEST(LengthSampler, KeyedDrawsIgnoreOrderAndFollowTheDistribution) {
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kUniform;
  d.low = 100;
  d.high = 300;
  LengthSampler a(d, 5), b(d, 5), other_seed(d, 6);
  for (int i = 0; i < 7; ++i) b.next();  // a sequence drawn before does not move keyed draws
  double sum = 0;
  std::int32_t lo = 1 << 30, hi = -1;
  int differs = 0, neighbours_differ = 0;
  for (std::uint64_t key = 0; key < 4000; ++key) {
    const auto v = a.at(key);
    ASSERT_EQ(v, b.at(key)) << key;
    ASSERT_EQ(v, a.at(key)) << key;  // a pure function of (seed, key)
    differs += v != other_seed.at(key) ? 1 : 0;
    neighbours_differ += v != a.at(key + 1) ? 1 : 0;
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_NEAR(sum / 4000, 200, 4);  // uniform 100..300: sd of the mean ~0.9
  EXPECT_EQ(lo, 100);
  EXPECT_EQ(hi, 300);
  EXPECT_GT(differs, 3900);  // 1/201 equal by chance
  EXPECT_GT(neighbours_differ, 3900);
}

}  // namespace
}  // namespace llmcap::analysis
