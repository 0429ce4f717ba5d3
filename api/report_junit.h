// A job's SLA verdicts as JUnit XML, for CI systems that show test reports rather than exit
// codes (`llmcapd run --junit FILE`, `llmcapd report --format junit`,
// GET /v1/jobs/{id}/report?format=junit). Input is the results document every report format
// reads (report_html.h report_document; report_tables.h rows); the texts and figures are the
// ones the verdict code wrote there, so the JUnit file says what the text report says.
//
// Mapping (docs/plans.md, "JUnit XML for CI"):
//   <testsuites>   the job: name "llmcap: <plan>", totals tests/failures/errors/skipped/time
//   <testsuite>    one per target (per target and workload in a workload matrix)
//   <testcase>     one per check of the step the target's verdict rests on, named by the check's
//                  stable code (ttft_p95, tpot_p95, error_rate, incomplete_rate, completion_rate,
//                  backlog, send_rate, schedule_lag, dropped_arrivals, client_cpu,
//                  target_clock, sample_count); checks that do not apply there are left out;
//                  plus `qualified_capacity`, the target's verdict.
//   The step: pass → the step of the qualified point (the confirm); inconclusive → the step of
//   the best evidence (the highest short-step pass), else the lowest failed level, else the
//   first inconclusive step; fail → the lowest level that failed.
//   A check held → passed; missed in a failed step and server-side → <failure type="sla">
//   whose message is the verdict's own text with the load ("tpot P95 47.1 ms > 35.0 ms limit
//   at confirm 5.35 rps (capacity_search)"); missed otherwise (client-side, too few samples, or
//   in an inconclusive step) or not evaluated → <skipped>. qualified_capacity: pass → passed,
//   fail → <failure>, inconclusive → <skipped> (JUnit has no "inconclusive"), no verdict →
//   <error>. `time`: the measured window of the step (s; virtual seconds for a prediction);
//   qualified_capacity and the suite: the sum over the target's steps.
// Every text is escaped with xml_escape (report_format.h). Pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace llmcap::api {

std::string render_junit(const nlohmann::json& results);

}  // namespace llmcap::api
