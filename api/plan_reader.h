// parse_plan(): the one parser + validator of test plans, shared by the REST API
// (POST /v1/jobs, POST /v1/plans:validate) and the CLI (`llmcapd run`). Strict: unknown keys,
// wrong types, out-of-range values and cross-field mistakes are all reported at once, each
// with its RFC 6901 JSON path. Pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/problem_json.h"
#include "api/test_plan.h"

namespace llmcap::api {

struct PlanParse {
  std::optional<TestPlan> plan;    // set when errors is empty
  std::vector<FieldError> errors;  // every problem found
  bool malformed = false;          // not JSON at all (→ 400 rather than 422)
  nlohmann::json normalized;       // defaults filled in, secrets redacted ("***")
  // Every step at its planned length, capacity searches at max_steps plus one confirm, times
  // the number of targets; excludes the drain of in-flight requests after each step.
  double estimated_duration_s = 0;
  std::string fingerprint;  // of workload + models + precisions (16 hex digits)
  // A target overrides the workload, or targets serve known-different models or precisions.
  bool per_target_optimised = false;
  std::vector<std::string> warnings;  // e.g. a step too short for tail percentiles
};

PlanParse parse_plan(std::string_view json_text, const PlanLimits& limits = {});
// The same for a document already parsed (a stored plan read back); the checks on the text
// itself (size, nesting, duplicate keys) are the caller's.
PlanParse parse_plan_document(const nlohmann::json& doc, const PlanLimits& limits = {});

// The normalised JSON of a plan (what parse_plan returns in `normalized`).
nlohmann::json plan_to_json(const TestPlan& plan, bool redact_secrets = true);

// The known name nearest to one typed wrong, for "did you mean" ("rtx4090-48gb" →
// "rtx4090-48g"): the same name in another case or with '-' for '_', a known name it is the
// start of or that is its start, else the nearest by edit distance if near enough; nullopt when
// none is (docs/plans.md, "Validation and warnings").
std::optional<std::string> nearest_name(std::string_view typed,
                                        const std::vector<std::string>& known);

// Nesting depth of JSON text (brackets outside strings), to refuse hostile input before a
// recursive parser sees it.
int json_nesting_depth(std::string_view text);

}  // namespace llmcap::api
