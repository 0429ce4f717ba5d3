// JSON encodings of analysis results, shared by the REST API (GET /v1/jobs/{id}/results), the
// one-shot CLI (`llmcapd run --out`) and reports. Latencies go out in milliseconds with the
// unit in the key (`ttft_ms`), rates in per-second units (`_rps`, `_tokens_per_s`).
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/capacity.h"
#include "analysis/capacity_search.h"
#include "analysis/cost.h"
#include "analysis/memory_fit.h"
#include "analysis/region_latency.h"
#include "analysis/step_stats.h"
#include "analysis/target_verdict.h"
#include "analysis/verdict.h"

namespace llmcap::api {

// Summary in ns → {"count", "mean", "min", "max", "stddev", "p50", ..., "p99_9"} in ms.
nlohmann::json summary_ms_json(const analysis::Summary& s);
nlohmann::json quantiles_ms_json(const analysis::HistogramQuantiles& q);
nlohmann::json step_stats_json(const analysis::StepStats& s);
nlohmann::json verdict_json(const analysis::StepVerdict& v);
nlohmann::json qualified_point_json(const analysis::QualifiedPoint& p);
nlohmann::json capacity_json(const analysis::QualifiedCapacity& c);
nlohmann::json target_verdict_json(const analysis::TargetVerdict& v);
nlohmann::json search_json(const analysis::CapacitySearchResult& r);
nlohmann::json demand_plan_json(const analysis::DemandPlan& p);
nlohmann::json comparison_json(const analysis::TargetComparison& c);
nlohmann::json memory_fit_json(const analysis::MemoryFit& m);
// {region: {requests, ttft_ms: {p50, p95}, tpot_ms: {...}, e2e_ms: {...}}}; null percentiles
// where a region had no value.
nlohmann::json region_latency_json(const std::map<std::string, analysis::RegionLatency>& regions);

}  // namespace llmcap::api
