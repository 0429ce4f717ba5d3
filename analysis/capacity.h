// Qualified capacity of one target from its judged steps (docs/metrics.md §5.1): the highest
// offered rate whose CONFIRMING run passed (open loop) and the highest concurrency whose step
// passed (closed loop), with throughput and latency there. "No qualified capacity" is a valid,
// stated result, and then the best evidence short of it is reported separately (never as
// capacity).
//
// Rules:
// * Open-loop steps are keyed by their PLANNED rate (JudgedStep::planned_rate_rps, the rate the
//   schedule was built from), never by a rate recomputed over the window: a 4 s and a 6 s
//   window at the same plan rate are one level. Closed-loop steps are keyed by concurrency.
//   Steps with role kExcluded (bursts) are not levels.
// * Open loop: a level is qualified when a confirming step passed at it (a capacity search's
//   longer confirm, or a soak) and no step at that level failed (a failed soak disqualifies the
//   rate its search confirmed). Short-step passes alone never qualify: the highest such level is
//   `best_evidence` ("≥ 7.01 rps short-step pass, not confirmed").
// * Closed loop (a concurrency sweep has no confirm): a level is qualified when a step at it
//   passed and none failed.
// * Inconclusive steps are no evidence either way and are ignored (they are counted in
//   steps_considered).
// * When several passing steps exist at the chosen level, the figures come from the longest
//   passing confirming window (the confirm step, normally).
// * `non_monotonic`: some lower level failed (noise or instability; reports say so).
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "analysis/step_stats.h"
#include "analysis/verdict.h"

namespace llmcap::analysis {

enum class StepRole : std::uint8_t {
  kLevel,     // an ordinary step at one load level (sweep step, search step)
  kConfirm,   // a longer confirming repeat of a search level
  kSoak,      // a long step at one rate: confirming evidence too
  kExcluded,  // not a load level (burst): judged, but never a capacity level
};

struct JudgedStep {
  StepStats stats;
  Outcome outcome = Outcome::kInconclusive;  // from judge_step()
  StepRole role = StepRole::kLevel;
  double planned_rate_rps = 0;  // open loop: the rate the schedule was planned at; 0 closed loop
  bool confirming() const { return role == StepRole::kConfirm || role == StepRole::kSoak; }
};

struct QualifiedPoint {
  double offered_rate_rps = 0;   // open loop: the planned rate of the level
  double achieved_rate_rps = 0;  // open loop: requests actually sent per second in the window
  std::int32_t concurrency = 0;  // closed loop
  double output_tokens_per_s = 0;
  double input_tokens_per_s = 0;
  double requests_per_s = 0;
  double ttft_p50_ns = 0, ttft_p95_ns = 0, ttft_p99_ns = 0;
  double tpot_p50_ns = 0, tpot_p95_ns = 0, tpot_p99_ns = 0;
  double e2e_p50_ns = 0, e2e_p95_ns = 0, e2e_p99_ns = 0;
  double error_rate = 0;
  bool confirmed = false;  // open loop: always true for a qualified point
  bool non_monotonic = false;
};

struct LoadCapacity {
  std::optional<QualifiedPoint> point;  // nullopt: no qualified level
  // Open loop without a qualified level: the highest level with a short-step pass and no fail
  // at it (never used for cost or instance counts). nullopt when there is none.
  std::optional<QualifiedPoint> best_evidence;
  std::size_t steps_considered = 0;
  std::string statement;  // e.g. "no passing step among 5 open-loop steps"
};

struct QualifiedCapacity {
  LoadCapacity open_loop;
  LoadCapacity closed_loop;
};

QualifiedCapacity qualified_capacity(std::span<const JudgedStep> steps);

}  // namespace llmcap::analysis
