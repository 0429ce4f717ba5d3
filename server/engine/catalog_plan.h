// The hardware catalogue as one plan (`llmcapd predict --catalog`): the user's plan with its
// targets replaced by one sim://<profile>/<model> target per GPU profile the simulator knows,
// each with the plan's model, precision, sim options, workload, SLA, phases and demand, and its
// hourly price from a price file. Profiles that cannot serve the plan (the model does not fit
// the card's memory, FP8 on a card without FP8, a sim option it refuses) are left out with the
// reason. The plan then runs in virtual time like any prediction; ranking its results is the
// caller's (server/cli/capacity_table.h: catalog_ranking_text).
//
// Each profile is offered at every tensor-parallel degree asked for (default 1, 2, 4, 8) that
// the model's layout takes (analysis::tensor_parallel_problem), as target "<profile>" (TP 1) or
// "<profile>-tp<N>", priced N × the GPU-hour; degrees whose instance cannot serve the plan drop
// out, and a profile is excluded only when none serves it.
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
};

struct CatalogPlan {
  nlohmann::json plan;                // a plan document (parse_plan input); set when error is empty
  std::string model;                  // the model every target serves
  std::string dtype;                  // its weight precision
  std::vector<std::string> hardware;  // the plan's target names ("h100-sxm", "h100-sxm-tp2")
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

}  // namespace llmcap::server
