// to_run_plan(): turns a validated api::TestPlan into the executor's RunPlan (agent step
// specs, analysis SLA). The plan parser has already range-checked every value; what can still
// fail here is reported as a message naming the JSON path.
#pragma once

#include <string>

#include "api/plan_reader.h"
#include "server/engine/run_plan.h"

namespace llmcap::server {

// `parse` must hold a plan (parse.errors empty). Returns "" or an error.
std::string to_run_plan(const api::PlanParse& parse, RunPlan& out);

}  // namespace llmcap::server
