// RunPlan: a validated plan in the shape the executor needs — targets as agent specs, the SLA
// as analysis/sla.h's, the phases as the plan gives them — built from the API's plan
// (api/test_plan.h) by to_run_plan() in plan_conversion.h. Plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/step_spec.h"
#include "analysis/cost.h"
#include "analysis/sla.h"
#include "api/test_plan.h"

namespace llmcap::server {

struct RunTarget {
  std::string name;  // the plan's; with a workload matrix "<target>@<workload>"
  // A workload matrix (`workloads`): the plan's target name and index, and the workload's name
  // ("" without a matrix: plan_target == name).
  std::string plan_target;
  std::size_t plan_target_index = 0;
  std::string workload_name;
  std::string base_url;          // as written in the plan (http[s]:// or sim://)
  std::string sim_options_json;  // the target's `sim` object ("{}" when absent)
  agent::TargetSpec spec;        // base_url resolved by the executor for sim:// targets
  agent::WorkloadSpec workload;  // the plan's workload or this target's override
  bool workload_overridden = false;
  // Workload mix (workload.mix): the SLA each class is judged against, parallel to
  // workload.mix (the plan's, with the class's bounds and error limit where it gives them).
  std::vector<analysis::SlaSpec> mix_slas;
  std::string hardware_json = "{}";      // hardware/engine record from the plan
  std::string precision;                 // e.g. "bf16" (hardware.precision or sim dtype)
  std::optional<double> price_per_hour;  // absent: not priced
  std::string currency = "USD";
  std::string metrics_url;
  // The daemon's target_allowlist (empty: any address, `llmcapd run`): the agent (spec, for
  // real targets) and the scraper of a plan-given metrics_url check every connection against it.
  std::vector<std::string> address_allowlist;
  // Simulated targets only: the simulator runs this many times faster than real time. The
  // executor runs each step compressed by this factor and scales every measured time back
  // (× time_scale) before analysis, so results read in simulated real time.
  double time_scale = 1.0;
  // An http(s) target that said it is llmcap's simulator (`llmcapd sim`; the executor asks it,
  // server/engine/target_probe.h): simulated in the results, time_scale taken from it.
  bool simulator_over_http = false;
};

// Phases run as the plan gives them (api::PlanPhase): one struct, one set of defaults.
using api::PhaseKind;
using api::PlanPhase;

struct RunPlan {
  std::string name;
  std::uint64_t seed = 42;
  std::vector<RunTarget> targets;
  std::vector<PlanPhase> phases;
  analysis::SlaSpec sla;
  agent::DeadlineSpec deadlines;
  std::optional<analysis::Demand> demand;
  double hours_per_month = analysis::kHoursPerMonth;
  std::string fingerprint;  // of the workload: equal plans compare, different ones do not
  bool per_target_optimised = false;
  double telemetry_interval_s = 1.0;  // scrape period of the targets' metrics (daemon config)
};

}  // namespace llmcap::server
