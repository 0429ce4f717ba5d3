// The hardware catalogue as one plan (`llmcapd predict --catalog`): the user's plan with its
// targets replaced by one sim://<profile>/<model> target per candidate, each with the plan's
// model, precision, sim options, workload, SLA, phases and demand, and its hourly price from a
// price file. The plan then runs in virtual time like any prediction, and catalog_ranking()
// ranks its results.
//
// A candidate is a GPU profile at one tensor-parallel degree of those asked for (default 1, 2,
// 4, 8), target "<profile>" (TP 1) or "<profile>-tp<N>", priced N × the GPU-hour. A candidate
// that cannot serve the plan (the model's heads do not split N ways, the weights and one
// request's KV do not fit, FP8 on a card without FP8, a sim option the profile refuses) is left
// out of the plan and listed in `excluded` with the reason, so no candidate disappears unsaid.
// Pure functions of their inputs; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/problem_json.h"

namespace llmcap::server {

// A price file: {"currency": "USD", "source": "...", "prices_per_hour": {"<profile>": 1.79}}.
// Prices are per GPU-hour, in `currency` (an instance of N GPUs costs N times as much).
struct CatalogPrices {
  std::string currency = "USD";
  std::string source;                      // free text: where the prices come from
  std::map<std::string, double> per_hour;  // profile name -> price per hour
};

struct CatalogPricesParse {
  std::optional<CatalogPrices> prices;  // set when errors is empty
  std::vector<api::FieldError> errors;  // each names its key ("prices_per_hour/h100-sxm")
};

// Strict: unknown keys, a price that is not a number in 0..1e6, a profile name the catalogue
// does not know (`known_hardware`), or a currency that is not three capital letters are errors.
CatalogPricesParse parse_catalog_prices(std::string_view text,
                                        const std::vector<std::string>& known_hardware);

struct CatalogExclusion {
  std::string hardware;  // profile name
  std::string reason;    // why it cannot serve the plan, with numbers
  std::string name;      // the candidate ("<profile>" or "<profile>-tp<N>")
  int tensor_parallel = 1;
};

struct CatalogPlan {
  nlohmann::json plan;                // a plan document (parse_plan input); set when error is empty
  std::string model;                  // the model every target serves
  std::string dtype;                  // its weight precision
  std::vector<std::string> hardware;  // the plan's target names ("h100-sxm", "h100-sxm-tp2")
  // Every other candidate, in catalogue order (profile, then degree).
  std::vector<CatalogExclusion> excluded;
  std::string error;  // "/targets: ..." when the plan names no sim:// target to start from
};

// `normalized_plan`: a validated plan's normalised JSON (api::PlanParse::normalized). The model,
// precision and `sim` options come from its first sim:// target; a price comes from `prices`,
// else from a plan target on the same profile, else there is none (the profile is ranked by
// capacity, after the priced ones). `only`: restrict to these profiles (empty: every one; an
// unknown name is an error naming it).
CatalogPlan build_catalog_plan(const nlohmann::json& normalized_plan, const CatalogPrices* prices,
                               const std::vector<std::string>& only = {},
                               const std::vector<int>& tensor_parallel = {1, 2, 4, 8});

// The catalogue ranking of a catalogue plan's results document (`results`, with the
// `catalog.excluded` list of build_catalog_plan's exclusions as `llmcapd predict --catalog`
// stores it): every candidate, ranked or with the reason it cannot qualify.
//
// With a `demand_plan` (the plan has `demand`), candidates with a qualified capacity and a price
// rank by the monthly cost of the fleet the demand needs (instances × price per hour × hours
// per month, analysis/cost.h), cost per million output tokens breaking ties; without one, by
// cost per million output tokens at the qualified capacity. Then qualified candidates without
// a price (most output tok/s first), then those without a qualified capacity (the SLA failed
// at every rate; inconclusive), then those that cannot serve the plan, in catalogue order.
// Returns {"ranked_by": "monthly_cost" | "cost_per_million_output_tokens", "basis": text,
// "currencies": [...], "candidates": [{"rank" (null when unranked), "name", "hardware",
// "tensor_parallel", "status": "qualified" | "fail" | "inconclusive" | "cannot_serve",
// "reason" (null for a priced qualified candidate), "output_tokens_per_s", "price_per_hour",
// "currency", "cost_per_million_output_tokens", "instances", "hourly_cost",
// "monthly_cost"}]}; absent figures are null.
nlohmann::json catalog_ranking(const nlohmann::json& results);

}  // namespace llmcap::server
