// Qualified capacity of one target from its judged steps (DOMAIN §3): the highest offered
// rate whose step passed (open loop) and the highest concurrency whose step passed (closed
// loop), with throughput and latency there. "No passing step" is a valid, stated result.
//
// Rules:
// * Open-loop steps have offered_rate_rps > 0; closed-loop steps have concurrency > 0.
// * A level is qualified when at least one step at it passed and no step at that level
//   failed (e.g. a failed confirm disqualifies the short pass at the same rate). Inconclusive
//   steps are no evidence either way and are ignored (they are counted in steps_considered).
// * When several passing steps exist at the chosen level, the figures come from the longest
//   window (the confirm step, normally).
// * `confirmed` says a step flagged as a confirm passed at that level; `non_monotonic` that
//   some lower level failed (noise or instability; reports should say so).
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "analysis/step_stats.h"
#include "analysis/verdict.h"

namespace llmcap::analysis {

struct JudgedStep {
  StepStats stats;
  Outcome outcome = Outcome::kInconclusive;  // from judge_step()
  bool confirm = false;                      // a longer confirming repeat
};

struct QualifiedPoint {
  double offered_rate_rps = 0;   // open loop
  std::int32_t concurrency = 0;  // closed loop
  double output_tokens_per_s = 0;
  double input_tokens_per_s = 0;
  double requests_per_s = 0;
  double ttft_p50_ns = 0, ttft_p95_ns = 0, ttft_p99_ns = 0;
  double tpot_p50_ns = 0, tpot_p95_ns = 0, tpot_p99_ns = 0;
  double e2e_p50_ns = 0, e2e_p95_ns = 0, e2e_p99_ns = 0;
  double error_rate = 0;
  bool confirmed = false;
  bool non_monotonic = false;
};

struct LoadCapacity {
  std::optional<QualifiedPoint> point;  // nullopt: no passing step
  std::size_t steps_considered = 0;
  std::string statement;  // e.g. "no passing step among 5 open-loop steps"
};

struct QualifiedCapacity {
  LoadCapacity open_loop;
  LoadCapacity closed_loop;
};

QualifiedCapacity qualified_capacity(std::span<const JudgedStep> steps);

}  // namespace llmcap::analysis
