// The equal-load comparison (docs/plans.md, "Equal-load comparison"; phase kind at_demand): every
// target driven at one offered rate — the plan's demand — side by side. Built from a results
// document's target phases (server/engine/plan_executor.cc writes it as the results'
// `at_demand`), read back for the CLI table and the reports (Markdown, HTML).
//
// Figures come from the at_demand step of each target; nothing is invented: a figure the step
// does not carry (KV use from a target that exports no telemetry, memory headroom of a real
// target whose KV pool is unknown, headroom without a capacity search) is null and prints "-".
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace llmcap::api {

// The results' `at_demand`: one entry per run of an at_demand phase (phase name and repeat; and
// workload, with a workload matrix),
// each with the load offered and one row per target that ran it (docs/plans.md; the shape is
// in docs/openapi.json, Results.at_demand). An empty array when the results have no at_demand
// phase.
nlohmann::json at_demand_comparison(const nlohmann::json& results);

// One target at the offered load.
struct AtDemandRow {
  std::string target;
  bool predicted = false;
  std::optional<double> offered_rate_rps;   // planned
  std::optional<double> achieved_rate_rps;  // requests sent per second in the window
  std::optional<double> requests_per_s;     // completed per second in the window
  std::optional<double> output_tokens_per_s;
  std::optional<double> ttft_p95_ms, tpot_p95_ms, e2e_p95_ms;
  std::optional<double> error_rate;           // fraction 0..1
  std::optional<double> kv_cache_usage_max;   // fraction 0..1, from the target's telemetry
  std::optional<double> memory_headroom_gib;  // KV pool free at the peak (simulated targets)
  std::string outcome;                        // pass | fail | inconclusive
  bool partial = false;                       // the step was cut short (cancelled, stopped)
  std::vector<std::string> missed;            // missed checks, e.g. "ttft_p95"
  std::optional<double> qualified_rate_rps;   // the target's qualified rate, with a capacity_search
  std::optional<double> capacity_headroom;    // qualified_rate_rps / demand (or offered) rps
};

// One run of an at_demand phase.
struct AtDemandTable {
  std::string phase;
  int repeat = 0;
  std::string workload;  // a workload matrix's workload ("" without one)
  std::string source;    // demand | rate_rps | output_tokens_per_s
  std::optional<double> offered_rate_rps;
  std::optional<double> demand_rps;
  bool with_headroom = false;
  double headroom = 0;
  std::optional<double> offered_output_tokens_per_s;
  bool same_config = true;  // false: a per-target optimised plan (its workloads may differ)
  std::vector<AtDemandRow> rows;
};

// The tables of results["at_demand"] (absent or malformed: none).
std::vector<AtDemandTable> at_demand_tables(const nlohmann::json& results);

// "at-demand", "at-demand, repeat 2, workload chat": which phase run the table is.
std::string at_demand_title(const AtDemandTable& table);
// "2.50 rps = demand 1.92 rps × 1.30 (headroom), 640 output tok/s": what was offered, and why.
std::string at_demand_load_text(const AtDemandTable& table);
// "PASS" | "FAIL (ttft_p95)" | "INCONCLUSIVE" | "INCONCLUSIVE (partial)", with "predicted" when
// the row is a prediction.
std::string at_demand_verdict_text(const AtDemandRow& row);
// ", the same arrivals and prompts on each" (or, in a per-target optimised plan, the same arrival
// times only): what is equal between the rows.
std::string at_demand_equal_text(const AtDemandTable& table);
// The columns' meaning, one sentence per column group (the CLI, Markdown and HTML legends).
extern const char* const kAtDemandLegend;

// A Markdown section ("## At equal load: ..." per table); "" when there is none.
std::string render_at_demand_markdown(const nlohmann::json& results);

}  // namespace llmcap::api
