// Dataset policy: where a plan's `workload.dataset.path` (and `workload.trace.path`) may point,
// checked once when the plan is validated or submitted, so a missing, unreadable or malformed
// dataset is a 422 (or, for `llmcapd run`, a usage error) naming the field — not a failure once the
// job runs.
//
// Over REST (confined): the path is relative to the configured dataset_dir, without ".." or a
// leading "/", and must resolve (symlinks followed) to a regular file inside it, of at most
// max_bytes; the daemon never opens anything else for a plan. Errors name the field and the
// path as given, never the directory layout or the file's content; "not found", "unreadable"
// and "not a regular file" inside dataset_dir are distinguished (the operator put those files
// there), outside it there is one answer. With no dataset_dir, REST plans cannot use datasets.
// From the command line (not confined): any path the user can read, with the same file checks.
// check_dataset() reads and parses the file: call it off the I/O threads (the REST handlers run
// on the blocking pool). Pure apart from the file system; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <vector>

#include "api/problem_json.h"
#include "api/test_plan.h"

namespace llmcap::server {

struct DatasetPolicy {
  bool confined = false;  // REST: only files under root_dir
  std::string root_dir;   // the daemon's dataset_dir ("" = datasets refused when confined)
  std::uint64_t max_bytes = 256ULL << 20;
};

struct DatasetCheck {
  std::optional<api::FieldError> problem;
  std::string resolved_path;  // absolute path to run from, when there is no problem
};

// field: the JSON pointer of the path, e.g. "/workload/dataset/path".
DatasetCheck check_dataset(const std::string& path, const std::string& field,
                           const DatasetPolicy& policy);

// The same for a workload's trace (workload.trace): the file is read and parsed in its format,
// and its window (start_s, duration_s, max_requests) must hold at least one request. field: the
// JSON pointer of the trace's path, e.g. "/workload/trace/path".
DatasetCheck check_trace(const api::PlanTrace& trace, const std::string& field,
                         const DatasetPolicy& policy);

// Checks every dataset and trace path of a plan (the plan's workload and each target's override),
// and that a dataset of chat "messages" is not given to a completions target, and rewrites the
// paths in the plan to the resolved absolute ones. Not confined (`llmcapd run`), the
// normalised JSON gets the absolute paths too; confined (REST), it keeps the relative path so
// the stored and echoed plan never show dataset_dir — the job runner calls this again with the
// same policy when the job starts. Returns the problems (empty when every dataset is usable).
std::vector<api::FieldError> check_plan_datasets(api::TestPlan& plan, nlohmann::json& normalized,
                                                 const DatasetPolicy& policy);

}  // namespace llmcap::server
