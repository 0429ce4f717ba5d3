// Cost per token, target comparison and demand planning (docs/metrics.md §6). All figures use the
// QUALIFIED output tokens/s (capacity.h), never the peak.
//
// * cost per million output tokens = H / (T × 3600) × 10⁶ (H: price per hour, T: tokens/s).
// * comparison of a target against a baseline: throughput ratio = T / T_base, price ratio =
//   H / H_base, relative cost per token = price ratio / throughput ratio (e.g. 1.5 / 1.24
//   ≈ 1.21: 1.5× the price for 1.24× the throughput costs 1.21× per token).
// * demand: required tokens/s = requests per minute × mean output tokens / 60 × (1 + headroom)
//   (e.g. 90 × 240 / 60 = 360 → 468 with 30%); instances = ceil(required / T), with a
//   1e-9 relative slack so that 468.0000000001 / 468 is one instance, not two; hourly cost =
//   instances × H; monthly = hourly × hours_per_month (default 730 = 8760 h / 12).
// Prices are in whatever currency the caller uses (consistent across targets).
// Pure functions; thread-safe. Bad inputs yield nullopt / infeasible lines, never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace llmcap::analysis {

inline constexpr double kHoursPerMonth = 730;

// nullopt when the price is negative or tokens/s is not positive.
std::optional<double> cost_per_million_output_tokens(double hourly_price,
                                                     double qualified_output_tokens_per_s);

struct TargetOffer {
  std::string name;
  std::optional<double> hourly_price;        // per instance; nullopt: not priced
  double qualified_output_tokens_per_s = 0;  // per instance; 0: no qualified capacity
  std::string currency;                      // of hourly_price; "" = unstated (matches any)
};

struct TargetComparison {
  std::string baseline;
  std::string target;
  double throughput_ratio = 0;         // T / T_base
  double price_ratio = 0;              // H / H_base
  double relative_cost_per_token = 0;  // price ratio / throughput ratio
};

// nullopt when either target lacks qualified capacity or a price, the baseline's price is 0, or
// the two prices are in different currencies (a ratio of EUR to USD means nothing).
std::optional<TargetComparison> compare_targets(const TargetOffer& baseline,
                                                const TargetOffer& target);

struct Demand {
  double requests_per_min = 0;
  double mean_output_tokens = 0;
  double headroom = 0.30;  // fraction added on top of the mean demand
};

// Mean demand before headroom (tokens/s).
double demand_output_tokens_per_s(const Demand& demand);
// With headroom.
double required_output_tokens_per_s(const Demand& demand);

struct PlanLine {
  std::string name;
  bool feasible = false;  // false: no qualified capacity (instances etc. are 0)
  std::int64_t instances = 0;
  std::optional<double> hourly_cost;  // nullopt: not feasible or the target has no price
  std::optional<double> monthly_cost;
  double utilisation = 0;  // mean demand (no headroom) / (instances × T)
  std::optional<double> cost_per_million_output_tokens;  // at the qualified point
};

struct DemandPlan {
  double demand_output_tokens_per_s = 0;
  double required_output_tokens_per_s = 0;
  double hours_per_month = kHoursPerMonth;
  std::vector<PlanLine> lines;  // same order as the offers
  // Index of the lowest hourly cost among priced feasible lines; nullopt when none is priced or
  // their prices are in different currencies (currencies_differ).
  std::optional<std::size_t> cheapest;
  bool currencies_differ = false;
};

DemandPlan plan_demand(const Demand& demand, std::span<const TargetOffer> offers,
                       double hours_per_month = kHoursPerMonth);

}  // namespace llmcap::analysis
