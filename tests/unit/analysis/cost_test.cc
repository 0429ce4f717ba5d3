#include "analysis/cost.h"

#include <gtest/gtest.h>

namespace llmcap::analysis {
namespace {

TEST(Cost, CostPerMillionOutputTokens) {
  // H / (T × 3600) × 10⁶: $2/h at 500 tok/s = 1.8 M tokens per hour → $1.111 per M.
  EXPECT_NEAR(*cost_per_million_output_tokens(2.0, 500), 2.0 / 1.8, 1e-12);
  EXPECT_NEAR(*cost_per_million_output_tokens(3.6, 1000), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(*cost_per_million_output_tokens(0, 100), 0);
  EXPECT_FALSE(cost_per_million_output_tokens(2.0, 0).has_value());
  EXPECT_FALSE(cost_per_million_output_tokens(-1, 100).has_value());
}

TEST(Cost, RelativeCostIsPriceRatioOverThroughputRatio) {
  // docs/metrics.md §6.2: 1.5× the price for 1.24× the throughput → 1.5 / 1.24 ≈ 1.21 per token.
  const TargetOffer a{"a100", 2.0, 1000, ""};
  const TargetOffer h{"h100", 3.0, 1240, ""};
  const auto c = compare_targets(a, h);
  ASSERT_TRUE(c.has_value());
  EXPECT_DOUBLE_EQ(c->price_ratio, 1.5);
  EXPECT_DOUBLE_EQ(c->throughput_ratio, 1.24);
  EXPECT_DOUBLE_EQ(c->relative_cost_per_token, 1.5 / 1.24);
  EXPECT_NEAR(c->relative_cost_per_token, 1.21, 0.005);
  // Consistent with the per-token costs themselves.
  EXPECT_NEAR(
      *cost_per_million_output_tokens(3.0, 1240) / *cost_per_million_output_tokens(2.0, 1000),
      c->relative_cost_per_token, 1e-12);
  EXPECT_FALSE(compare_targets(a, {"none", 3.0, 0, ""}).has_value());
}

TEST(Cost, DemandFromDomainExample) {
  // docs/metrics.md §6.3: 90 rpm × 240 tokens / 60 = 360 tok/s; with 30% headroom 468 tok/s.
  const Demand d{90, 240, 0.30};
  EXPECT_DOUBLE_EQ(demand_output_tokens_per_s(d), 360);
  EXPECT_NEAR(required_output_tokens_per_s(d), 468, 1e-9);
}

TEST(Cost, InstancesHourlyMonthlyAndCheapest) {
  const Demand d{90, 240, 0.30};  // 468 tok/s required
  const std::vector<TargetOffer> offers = {
      {"exact", 4.0, 468, ""},  // exactly one instance despite 468.00000000000006
      {"half", 1.5, 234, ""},   // exactly two
      {"small", 1.0, 200, ""},  // 2.34 → three
      {"none", 1.0, 0, ""}};    // no qualified capacity
  const DemandPlan plan = plan_demand(d, offers);
  EXPECT_DOUBLE_EQ(plan.hours_per_month, 730);
  ASSERT_EQ(plan.lines.size(), 4u);
  EXPECT_EQ(plan.lines[0].instances, 1);
  EXPECT_EQ(plan.lines[1].instances, 2);
  EXPECT_EQ(plan.lines[2].instances, 3);
  EXPECT_FALSE(plan.lines[3].feasible);
  EXPECT_EQ(plan.lines[3].instances, 0);
  EXPECT_DOUBLE_EQ(*plan.lines[1].hourly_cost, 3.0);
  EXPECT_DOUBLE_EQ(*plan.lines[1].monthly_cost, 3.0 * 730);
  EXPECT_DOUBLE_EQ(*plan.lines[2].hourly_cost, 3.0);
  EXPECT_NEAR(plan.lines[0].utilisation, 360.0 / 468, 1e-12);
  EXPECT_NEAR(plan.lines[2].utilisation, 360.0 / 600, 1e-12);
  ASSERT_TRUE(plan.cheapest.has_value());
  EXPECT_EQ(*plan.cheapest, 1u);  // first of the $3/h lines
  EXPECT_NEAR(*plan.lines[0].cost_per_million_output_tokens, 4.0 / (468 * 3600.0) * 1e6, 1e-12);
  // Hours per month is the caller's choice.
  EXPECT_DOUBLE_EQ(*plan_demand(d, offers, 720).lines[0].monthly_cost, 4.0 * 720);
}

TEST(Cost, ATargetWithoutAPriceGetsInstancesButNoCost) {
  // No price is not a price of 0: the instance count stands, every cost is unknown, and the
  // unpriced line is never the cheapest.
  const Demand d{90, 240, 0.30};  // 468 tok/s required
  const std::vector<TargetOffer> offers = {{"unpriced", std::nullopt, 468, ""},
                                           {"priced", 9.0, 234, ""}};
  const DemandPlan plan = plan_demand(d, offers);
  ASSERT_EQ(plan.lines.size(), 2u);
  EXPECT_TRUE(plan.lines[0].feasible);
  EXPECT_EQ(plan.lines[0].instances, 1);
  EXPECT_FALSE(plan.lines[0].hourly_cost.has_value());
  EXPECT_FALSE(plan.lines[0].monthly_cost.has_value());
  EXPECT_FALSE(plan.lines[0].cost_per_million_output_tokens.has_value());
  ASSERT_TRUE(plan.cheapest.has_value());
  EXPECT_EQ(*plan.cheapest, 1u);
  EXPECT_FALSE(compare_targets(offers[1], offers[0]).has_value());
  EXPECT_FALSE(compare_targets(offers[0], offers[1]).has_value());
}

TEST(Cost, NoFeasibleTarget) {
  const std::vector<TargetOffer> offers = {{"none", 1.0, 0, ""}};
  const DemandPlan plan = plan_demand({60, 100, 0}, offers);
  EXPECT_FALSE(plan.cheapest.has_value());
  EXPECT_DOUBLE_EQ(plan.required_output_tokens_per_s, 100);
}

TEST(Cost, DifferentCurrenciesAreNeitherComparedNorRanked) {
  const Demand d{90, 240, 0.30};
  const std::vector<TargetOffer> offers = {{"eu", 1.0, 468, "EUR"}, {"us", 2.0, 468, "USD"}};
  const DemandPlan plan = plan_demand(d, offers);
  EXPECT_TRUE(plan.currencies_differ);
  EXPECT_FALSE(plan.cheapest.has_value());
  EXPECT_DOUBLE_EQ(*plan.lines[0].hourly_cost, 1.0);  // each cost stands in its own currency
  EXPECT_FALSE(compare_targets(offers[0], offers[1]).has_value());
  const std::vector<TargetOffer> same = {{"a", 1.0, 468, "EUR"}, {"b", 2.0, 468, "EUR"}};
  EXPECT_FALSE(plan_demand(d, same).currencies_differ);
  EXPECT_EQ(*plan_demand(d, same).cheapest, 0u);
  EXPECT_TRUE(compare_targets(same[0], same[1]).has_value());
}
}  // namespace
}  // namespace llmcap::analysis
