// Side-by-side comparison of several jobs (GET /v1/compare?jobs=a,b): combines their results
// documents into one results-like document that report_html.h / report_tables.h render as
// usual. Jobs get short labels in order ("A", "B", …, "Z", "AA"; `jobs[].label`) and their kind
// (`jobs[].kind`: "predicted" for a prediction in virtual time, else "measured"); capacity rows
// of every job appear together, each target renamed "<target name> (<label>)" (keeping
// `job_id`, `job_label`, `job_kind` and `source_name`) so equal target names of two jobs stay
// apart while chart legends stay short.
//
// Predictions and measurements never meet in an A/B row or in one demand table:
// - `comparison_mode` is "predicted vs measured" when the jobs include both kinds, else "A/B".
//   Then `prediction_checks` holds api::prediction_check of every predicted job against every
//   measured one (each target against its counterpart, measured vs predicted with the error in
//   %), labelled with both jobs' ids, labels and plans (and `slas_differ`).
// - The A/B `comparison` pairs jobs of the same kind only: each target with the target of the
//   same name in the first job of its kind that has one (`comparison_basis: "same-name
//   targets"`); only when no name recurs is every target compared with the first target of its
//   kind (`"first target"`). With one job of each kind there is no A/B row and no basis.
// - `demand_plan` (one table, "cheapest" across every job; `demand_basis: "across jobs"`) only
//   when every job is of one kind and the jobs agree on demand, SLA and workload; otherwise
//   `demand_plans` (`demand_basis: "per job"`, `demand_per_job_reason`): one plan per job with a
//   demand, over that job's targets only (docs/metrics.md §6.2).
//
// A job's id is read from `job.id` (the REST results document), else `job_id`, else
// "job <index>". Jobs are comparable only when their `workload_fingerprint`s are equal (same
// model, precision, lengths and generation rules, docs/metrics.md §8.1); otherwise compare_results
// fails naming the jobs, unless allow_different_workloads is set, in which case the document is
// labelled "different workloads" and carries `workloads_differ: true`.
// Pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace llmcap::api {

struct CompareOutcome {
  std::optional<nlohmann::json> document;    // set on success
  std::string error;                         // human text naming the offending jobs, on failure
  std::vector<std::string> mismatched_jobs;  // jobs whose fingerprint differs from the first's
                                             // (the first job included), or the invalid ones
};

// Fails (no document) when fewer than two documents are given, when a document is not an
// object with a `targets` array, or when fingerprints differ and allow_different_workloads is
// false.
CompareOutcome compare_results(std::vector<nlohmann::json> results_docs,
                               bool allow_different_workloads);

}  // namespace llmcap::api
