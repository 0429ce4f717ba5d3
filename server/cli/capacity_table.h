// The qualified-capacity table printed by `llmcapd run`, `llmcapd demo` and `llmcapd report
// --text`: one line per target, built from the same rows as every report format
// (api/report_tables.h), then the verdict, the comparison and the demand plan. Money columns
// carry the target's currency; a target without a price shows "-" (never a cost of 0).
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace llmcap::server {

std::string capacity_table_text(const nlohmann::json& results);

// "P95 ttft <= 1000 ms; P95 tpot <= 35 ms; errors <= 1%" from a plan's normalised `sla`.
std::string sla_text(const nlohmann::json& sla);

}  // namespace llmcap::server
