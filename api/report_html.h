// The capacity report as one self-contained HTML page: inline CSS, charts as inline SVG
// (svg_chart.h), no scripts, no external assets, so it works offline and can be mailed or
// archived as a single file. Input is a report document (report_document below: a results
// document of server/engine/plan_executor.cc with the plan it ran) or the combined document of
// report_compare.h.
//
// Sections (stable ids/classes for tests and styling):
//   header                 plan, state, labels (simulated, same-config / per-target optimised)
//   #capacity-table        qualified capacity per target (report_tables.h CapacityRow)
//   #comparison-table      relative cost per token against the first target
//   #demand-table          instances and monthly cost per target
//   #jobs-table            jobs of a combined (compare) document
//   charts: svg.chart[data-chart=throughput-vs-concurrency | throughput-vs-rate |
//           ttft-vs-concurrency | ttft-vs-rate | tpot-vs-concurrency | tpot-vs-rate |
//           burst-ttft | burst-in-flight | cdf-ttft | cdf-tpot]
//   #burst-table, #soak-table, table.steps-table[data-target], #hardware, pre#plan-json
// Every text from the document is HTML-escaped. Charts and tables tolerate missing fields.
// Pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace llmcap::api {

struct ReportOptions {
  std::string title;              // page title; "" → "Capacity report: <plan>"
  std::string job_id;             // shown in the header when set
  std::string generated_at;       // e.g. an ISO 8601 time, shown when set (the caller's clock)
  bool include_step_cdfs = true;  // per-step latency CDF charts
  bool include_plan = true;       // the normalised plan as pretty JSON
};

// The one input of every report (HTML, Markdown, CSV, compare): a job's results document with
// the plan it ran as `plan_document` (the normalised plan, secrets redacted, as the daemon
// stores it and `llmcapd run` parses it). The charts' SLA lines, the burst timings, the demand
// of a comparison and the plan section all come from that plan. `llmcapd run --out` writes it;
// the daemon builds it from its stored results and stored plan for GET /v1/jobs/{id}/report,
// GET /v1/compare and `llmcapd report JOB_ID`. A `plan_document` that is not a JSON object
// (absent, or a stored plan that did not parse) leaves the results' own one in place; without
// any, the report says so instead of drawing SLA lines.
nlohmann::json report_document(nlohmann::json results, const nlohmann::json& plan_document);

std::string render_report_html(const nlohmann::json& results, const ReportOptions& options = {});

}  // namespace llmcap::api
