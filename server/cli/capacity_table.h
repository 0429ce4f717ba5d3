// The qualified-capacity table printed by `llmcapd run`, `llmcapd demo` and `llmcapd report
// --text`: one line per target, built from the same rows as every report format
// (api/report_tables.h), then the verdict, the comparison, the demand plan and the equal-load
// comparison. Money columns carry the target's currency; a target without a price shows "-"
// (never a cost of 0).
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace llmcap::server {

std::string capacity_table_text(const nlohmann::json& results);

// The equal-load comparison (results["at_demand"], api/at_demand.h), one block per at_demand
// phase run: the load offered, then per target the figures at it; "" when there is none.
// capacity_table_text() ends with it.
std::string at_demand_text(const nlohmann::json& results);

// `llmcapd predict --catalog`: the catalogue plan's results (server/engine/catalog_plan.h) ranked
// by cost per million output tokens at each profile's qualified capacity (priced and qualified
// first, cheapest first; then qualified without a price, by output tok/s; then profiles without
// a qualified capacity), with the instances and monthly cost the plan's demand needs, then the
// profiles that cannot serve the plan and why (results["catalog"]["excluded"]).
std::string catalog_ranking_text(const nlohmann::json& results);

// "P95 ttft <= 1000 ms; P95 tpot <= 35 ms; errors <= 1%" from a plan's normalised `sla`.
std::string sla_text(const nlohmann::json& sla);

}  // namespace llmcap::server
