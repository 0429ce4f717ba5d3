// to_run_plan(): turns a validated api::TestPlan into the executor's RunPlan (agent step
// specs, analysis SLA). The plan parser has already range-checked every value; what can still
// fail here is reported as a message naming the JSON path.
#pragma once

#include <string>

#include "agent/arrival_process.h"
#include "agent/step_spec.h"
#include "api/plan_reader.h"
#include "server/engine/run_plan.h"

namespace llmcap::server {

// `parse` must hold a plan (parse.errors empty). Returns "" or an error.
std::string to_run_plan(const api::PlanParse& parse, RunPlan& out);

// The load generator's spelling of a phase's drain and arrival settings.
agent::DrainPolicy to_drain_policy(api::Drain d);
agent::InterArrival to_inter_arrival(api::Arrival a);

}  // namespace llmcap::server
