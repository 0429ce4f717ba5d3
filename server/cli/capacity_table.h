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

// `llmcapd predict --catalog`: the catalogue plan's results (server/engine/catalog_plan.h) as
// the ranking catalog_ranking() makes of them: first what it is ranked by (the monthly cost of
// the fleet the plan's demand needs, or without a demand cost per million output tokens), then
// one line per candidate (ranked ones first, then those that cannot qualify, then those that
// cannot serve the plan), then why each unranked (or last-ranked) candidate is where it is.
std::string catalog_ranking_text(const nlohmann::json& results);

// "P95 ttft <= 1000 ms; P95 tpot <= 35 ms; errors <= 1%" from a plan's normalised `sla`.
std::string sla_text(const nlohmann::json& sla);

}  // namespace llmcap::server
