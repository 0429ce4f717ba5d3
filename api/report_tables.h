// The tables of a capacity report, extracted from a results document (the JSON written by
// server/engine/plan_executor.cc and api/result_json.h; also the combined document of
// report_compare.h) and rendered as Markdown or CSV. report_html.h renders the same rows as
// HTML, so every format shows the same figures.
//
// Rows tolerate missing fields (a failed or partial job): absent numbers become nullopt and
// print as "-" (Markdown/HTML) or an empty cell (CSV). CSV follows RFC 4180: CRLF line ends,
// fields holding , " CR or LF quoted with inner quotes doubled.
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace llmcap::api {

// One target's qualified-capacity point (docs/metrics.md §5, §6): the seed of every decision.
struct CapacityRow {
  std::string target;
  // A workload matrix (`workloads`): the workload this row measured ("" without a matrix); the
  // rows come workload by workload, and reports show one table per workload.
  std::string workload;
  std::string job_id;  // the target's job_id (combined documents), else the results' job_id
  std::string model;
  std::string precision;
  std::optional<double> input_tokens_mean;
  std::optional<double> output_tokens_mean;
  bool qualified = false;                  // a qualified point exists
  std::string basis;                       // "open_loop" | "closed_loop" | ""
  std::optional<double> offered_rate_rps;  // open-loop basis
  std::optional<int> concurrency;          // closed-loop basis
  std::optional<double> requests_per_s;    // sustained (completed) rate at the point
  // Requests per second that met every SLO at the point (docs/metrics.md §3.3), and their share
  // of the requests intended; from the step the point was measured in (found by its rate or
  // concurrency and figures), nullopt when no step matches.
  std::optional<double> goodput_rps;
  std::optional<double> sla_attainment;  // fraction 0..1
  std::optional<double> output_tokens_per_s;
  std::optional<double> ttft_p95_ms;
  std::optional<double> tpot_p95_ms;
  std::optional<double> e2e_p50_ms, e2e_p95_ms;
  std::optional<double> error_rate;  // fraction 0..1
  // Free memory at the qualified point, when the document carries it: the target's
  // `memory_headroom_gb`, or `qualified.memory_headroom_gb`, or `memory.headroom_gb`.
  std::optional<double> memory_headroom_gb;
  std::optional<double> price_per_hour;
  std::string currency;
  std::optional<double> cost_per_million_output_tokens;
  // Open loop: what was actually sent per second in the window at the point (the planned rate
  // is offered_rate_rps).
  std::optional<double> achieved_rate_rps;
  // No qualified point: the row's figures are the best evidence short of one (the highest
  // short-step pass, never confirmed); shown as "≥ R rps (not confirmed)" and never priced.
  bool evidence_only = false;
  // "qualified" (verdict pass); "fail: no qualified capacity" | "inconclusive: no qualified
  // capacity" (documents with a target verdict); "no qualified capacity" (older documents).
  std::string verdict;
  std::string outcome;              // "pass" | "fail" | "inconclusive" | "" (older documents)
  std::string statement;            // the target verdict's statement (which check failed where)
  std::vector<std::string> labels;  // "simulated", "same-config" | "per-target optimised",
                                    // "client-bound steps present", "insufficient-samples",
                                    // "non-monotonic"
};

// Client-side latency of one region's agents in a scale-out step (the step's "regions").
struct RegionLatency {
  std::string region;
  std::optional<double> requests;
  std::optional<double> ttft_p50_ms, ttft_p95_ms, tpot_p50_ms, tpot_p95_ms, e2e_p50_ms, e2e_p95_ms;
};

// One class of a workload-mix step (the step's "mix", docs/plans.md "Workload mixes"): its
// share of the window's requests, its own percentiles and its own verdict.
struct MixClassRow {
  std::string name;
  std::optional<double> weight;  // planned share
  std::optional<double> share;   // share of the window's requests
  std::optional<double> requests;
  std::optional<double> input_tokens_mean, output_tokens_mean;  // planned
  std::optional<double> output_tokens_per_s;
  std::optional<double> ttft_p50_ms, ttft_p95_ms, tpot_p50_ms, tpot_p95_ms, itl_p95_ms;
  std::optional<double> e2e_p50_ms, e2e_p95_ms;
  std::optional<double> error_rate;
  std::string outcome;
  std::vector<std::string> reasons;  // the class's missed / not-evaluated checks
};

// The sessions of a conversation step (the step's "conversation", docs/plans.md
// "Conversations"): how they ended, how long they took, and TTFT by turn index.
struct ConversationTurnRow {
  int turn = 0;  // 1-based
  std::optional<double> requests;
  std::optional<double> ttft_p50_ms, ttft_p95_ms;
  std::optional<double> input_tokens_mean;
};
struct ConversationRow {
  std::optional<double> sessions_started, sessions_completed, sessions_failed,
      sessions_context_limit, sessions_cut;
  std::optional<double> turns_per_session_mean;
  std::optional<double> duration_p50_s, duration_p95_s;
  std::vector<ConversationTurnRow> by_turn;
};

// One measured step of one target (all phases), with its verdict and the reasons that decided
// it (missed / not-evaluated checks; "all checks held" for a clean pass).
struct StepRow {
  std::string target;
  std::string phase;
  std::string phase_kind;
  std::string label;  // "c=8", "12.00 rps", "burst ..."
  std::optional<int> concurrency;
  std::optional<double> offered_rate_rps;
  std::optional<double> requests_per_s;
  std::optional<double> output_tokens_per_s;
  std::optional<double> ttft_p50_ms, ttft_p95_ms, ttft_p99_ms;
  std::optional<double> tpot_p50_ms, tpot_p95_ms, tpot_p99_ms;
  std::optional<double> e2e_p50_ms, e2e_p95_ms;
  std::optional<double> error_rate;
  std::optional<double> goodput_rps;     // requests/s that met every SLO (docs/metrics.md §3.3)
  std::optional<double> sla_attainment;  // their share of the requests intended, 0..1
  bool client_bound = false;
  bool partial = false;
  std::string outcome;                          // "pass" | "fail" | "inconclusive" | ""
  std::vector<std::string> reasons;             // human texts
  std::vector<RegionLatency> regions;           // scale-out with region labels; else empty
  std::vector<MixClassRow> mix;                 // workload-mix steps: one row per class; else empty
  std::optional<ConversationRow> conversation;  // workload.conversation steps
};

struct DemandRow {
  std::string target;
  bool feasible = false;
  std::optional<long long> instances;
  std::optional<double> hourly_cost;
  std::optional<double> monthly_cost;
  std::optional<double> utilisation;
  std::optional<double> cost_per_million_output_tokens;
  bool cheapest = false;
};

std::vector<CapacityRow> capacity_rows(const nlohmann::json& results);
// The step of `target` (one of the document's "targets") that a capacity point — its
// `qualified` or `best_evidence` — was measured in: same load (rate or concurrency) and the same
// throughput figures; the last such step (a confirm or soak repeats an earlier rate). Null when
// none matches (an older or hand-made document).
const nlohmann::json* step_of_point(const nlohmann::json& target, const nlohmann::json& point);
std::vector<StepRow> step_rows(const nlohmann::json& results);
// The rows of the document's `demand_plan`.
std::vector<DemandRow> demand_rows(const nlohmann::json& results);
// The rows of one demand plan (a `demand_plan`, or one of a comparison's `demand_plans`).
std::vector<DemandRow> demand_plan_rows(const nlohmann::json& demand_plan);
// "## Workload mix: per-class results" with one row per class of every mix step ("" when the
// job has no mix step).
std::string render_mix_markdown(const nlohmann::json& results);
// "## Conversations: sessions and TTFT by turn" with one row per conversation step ("" when the
// job has none).
std::string render_conversation_markdown(const nlohmann::json& results);

// "12.00 rps (achieved 11.93)" (offered, open loop; the achieved rate only with_achieved) /
// "c=8" (closed loop) / "-"; "≥ 12.00 rps, not confirmed" for best evidence short of a
// qualified capacity.
std::string load_text(const CapacityRow& row, bool with_achieved = true);
// "512 / 128" / "-".
std::string lengths_text(const CapacityRow& row);
// "4.40 (92% met SLO)" / "4.40" / "-": goodput in requests/s with the SLA attainment.
std::string goodput_text(const std::optional<double>& goodput_rps,
                         const std::optional<double>& sla_attainment);

// "All regions" first (the step's overall figures), then one row per region; empty when the
// step has no regions.
std::vector<RegionLatency> region_table(const StepRow& step);

// A Markdown report: title, capacity table, comparison, demand plan, per-step tables, and
// client-side latency per region when agents carried region labels.
std::string render_markdown(const nlohmann::json& results);

// The capacity table as CSV (header + one line per target).
std::string render_capacity_csv(const nlohmann::json& results);
// Every step as CSV (header + one line per step).
std::string render_steps_csv(const nlohmann::json& results);

// One RFC 4180 field: quoted when it holds , " CR or LF.
std::string csv_field(std::string_view text);

}  // namespace llmcap::api
