// RunPlan: a validated plan in the shape the executor needs — agent step specs, analysis SLA,
// phases — built from the API's plan (api/test_plan.h) by to_run_plan() in plan_conversion.h.
// Plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/step_spec.h"
#include "analysis/cost.h"
#include "analysis/sla.h"

namespace llmcap::server {

struct RunTarget {
  std::string name;
  std::string base_url;          // as written in the plan (http[s]:// or sim://)
  std::string sim_options_json;  // the target's `sim` object ("{}" when absent)
  agent::TargetSpec spec;        // base_url resolved by the executor for sim:// targets
  agent::WorkloadSpec workload;  // the plan's workload or this target's override
  bool workload_overridden = false;
  std::string hardware_json = "{}";  // hardware/engine record from the plan
  std::string precision;             // e.g. "bf16" (hardware.precision or sim dtype)
  double price_per_hour = 0;
  std::string currency = "USD";
  std::string metrics_url;
  // Simulated targets only: the simulator runs this many times faster than real time. The
  // executor runs each step compressed by this factor and scales every measured time back
  // (× time_scale) before analysis, so results read in simulated real time.
  double time_scale = 1.0;
};

enum class PhaseKind { kConcurrencySweep, kRateSweep, kCapacitySearch, kBurst, kSoak };
const char* to_string(PhaseKind k);

struct RunPhase {
  PhaseKind kind = PhaseKind::kConcurrencySweep;
  std::string name;  // defaults to the kind
  int repeat = 1;
  double duration_s = 30;
  double warmup_s = 5;
  agent::DrainPolicy drain = agent::DrainPolicy::kWait;
  agent::InterArrival arrival = agent::InterArrival::kPoisson;
  double burstiness = 1;
  std::int32_t max_in_flight = 10'000;
  std::vector<std::int32_t> levels;  // concurrency_sweep
  std::vector<double> rates_rps;     // rate_sweep
  // capacity_search
  bool start_from_knee = true;
  double start_rps = 0;
  double low_rps = 0, high_rps = 0;  // 0: unset
  double resolution = 0.05;
  int max_steps = 12;
  double confirm_duration_s = 60;
  // burst
  double base_rps = 0, multiplier = 3, burst_s = 10, observe_s = 60;
  // soak
  bool soak_at_qualified = false;
  double soak_rps = 0;
  double window_s = 30;
};

struct RunPlan {
  std::string name;
  std::uint64_t seed = 42;
  std::vector<RunTarget> targets;
  std::vector<RunPhase> phases;
  analysis::SlaSpec sla;
  agent::DeadlineSpec deadlines;
  std::optional<analysis::Demand> demand;
  double hours_per_month = analysis::kHoursPerMonth;
  std::string fingerprint;  // of the workload: equal plans compare, different ones do not
  bool per_target_optimised = false;
  double telemetry_interval_s = 1.0;  // scrape period of the targets' metrics (daemon config)
};

}  // namespace llmcap::server
