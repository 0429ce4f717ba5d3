#include "analysis/cost.h"

#include <cmath>

namespace llmcap::analysis {

std::optional<double> cost_per_million_output_tokens(double hourly_price,
                                                     double qualified_output_tokens_per_s) {
  if (!(hourly_price >= 0) || !(qualified_output_tokens_per_s > 0)) return std::nullopt;
  return hourly_price / (qualified_output_tokens_per_s * 3600.0) * 1e6;
}

std::optional<TargetComparison> compare_targets(const TargetOffer& baseline,
                                                const TargetOffer& target) {
  if (!(baseline.qualified_output_tokens_per_s > 0) ||
      !(target.qualified_output_tokens_per_s > 0) || !baseline.hourly_price ||
      !target.hourly_price || !(*baseline.hourly_price > 0) || !(*target.hourly_price >= 0) ||
      (!baseline.currency.empty() && !target.currency.empty() &&
       baseline.currency != target.currency)) {
    return std::nullopt;
  }
  TargetComparison c;
  c.baseline = baseline.name;
  c.target = target.name;
  c.throughput_ratio =
      target.qualified_output_tokens_per_s / baseline.qualified_output_tokens_per_s;
  c.price_ratio = *target.hourly_price / *baseline.hourly_price;
  c.relative_cost_per_token = c.price_ratio / c.throughput_ratio;
  return c;
}

double demand_output_tokens_per_s(const Demand& d) {
  return d.requests_per_min * d.mean_output_tokens / 60.0;
}

double required_output_tokens_per_s(const Demand& d) {
  return demand_output_tokens_per_s(d) * (1.0 + d.headroom);
}

DemandPlan plan_demand(const Demand& demand, std::span<const TargetOffer> offers,
                       double hours_per_month) {
  DemandPlan plan;
  plan.demand_output_tokens_per_s = demand_output_tokens_per_s(demand);
  plan.required_output_tokens_per_s = required_output_tokens_per_s(demand);
  plan.hours_per_month = hours_per_month;
  for (std::size_t i = 0; i < offers.size(); ++i) {
    const TargetOffer& o = offers[i];
    PlanLine line;
    line.name = o.name;
    if (o.hourly_price)
      line.cost_per_million_output_tokens =
          cost_per_million_output_tokens(*o.hourly_price, o.qualified_output_tokens_per_s);
    // A target without a price still gets its instance count; only its costs are unknown. A
    // negative (or NaN) price is a bad input: infeasible.
    const bool priced = o.hourly_price.has_value();
    const bool bad_price = priced && !(*o.hourly_price >= 0);
    if (o.qualified_output_tokens_per_s > 0 && !bad_price) {
      line.feasible = true;
      const double needed = plan.required_output_tokens_per_s / o.qualified_output_tokens_per_s;
      // Slack for floating-point noise: 360 × 1.3 = 468.00000000000006.
      line.instances = static_cast<std::int64_t>(std::ceil(needed * (1 - 1e-9)));
      if (plan.required_output_tokens_per_s > 0 && line.instances < 1) line.instances = 1;
      if (priced) {
        line.hourly_cost = static_cast<double>(line.instances) * *o.hourly_price;
        line.monthly_cost = *line.hourly_cost * hours_per_month;
      }
      if (line.instances > 0) {
        line.utilisation = plan.demand_output_tokens_per_s /
                           (static_cast<double>(line.instances) * o.qualified_output_tokens_per_s);
      }
      if (line.hourly_cost &&
          (!plan.cheapest || *line.hourly_cost < *plan.lines[*plan.cheapest].hourly_cost)) {
        plan.cheapest = i;
      }
    }
    plan.lines.push_back(std::move(line));
  }
  // The cheapest is only meaningful in one currency.
  std::string currency;
  for (std::size_t i = 0; i < offers.size(); ++i) {
    if (!plan.lines[i].hourly_cost || offers[i].currency.empty()) continue;
    if (currency.empty())
      currency = offers[i].currency;
    else if (currency != offers[i].currency)
      plan.currencies_differ = true;
  }
  if (plan.currencies_differ) plan.cheapest.reset();
  return plan;
}

}  // namespace llmcap::analysis
