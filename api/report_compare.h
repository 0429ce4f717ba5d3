// Side-by-side comparison of several jobs (GET /v1/compare?jobs=a,b): combines their results
// documents into one results-like document that report_html.h / report_tables.h render as
// usual. Jobs get short labels in order ("A", "B", …, "Z", "AA"; `jobs[].label`); capacity rows
// of every job appear together, each target renamed "<target name> (<label>)" (keeping
// `job_id`, `job_label` and `source_name`) so equal target names of two jobs stay apart while
// chart legends stay short. The comparison compares each target with the target of the same
// name in the first job that has one (`comparison_basis: "same-name targets"`); only when no
// name recurs across jobs is every target compared with the first job's first target
// (`"first target"`). The demand plan is recomputed over all qualified targets
// (docs/metrics.md §6.2).
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
