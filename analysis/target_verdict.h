// TargetVerdict: the one answer for one target — pass, fail or inconclusive — from its judged
// steps and its qualified capacity (capacity.h), with the statement a buyer reads.
//
// Basis: open loop when the target ran any open-loop level (a rate sweep, capacity search or
// soak), else closed loop (a concurrency sweep alone). Then:
//   pass          the basis has a qualified point (open loop: a passing confirm, capacity.h).
//   fail          no qualified point and the SLA held at no level tried: steps failed, none
//                 of the basis passed (not even a short step), and no level below the lowest
//                 failed one was left unjudged (inconclusive). The statement names which
//                 checks failed at which levels.
//   inconclusive  no qualified point, but no proof that the SLA holds nowhere: short-step
//                 passes whose confirms failed (named, confirms first: noise at the SLA
//                 boundary or a search out of steps must not read as "this server fails"),
//                 short passes never confirmed, client-bound or insufficient-sample steps, or
//                 nothing judged.
// Labels count the inconclusive steps by cause: client_bound_steps (the load generator was the
// bottleneck) and insufficient_sample_steps (too few requests in the window).
// Pure function; thread-safe.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "analysis/capacity.h"

namespace llmcap::analysis {

struct LevelFailure {
  double rate_rps = 0;             // open loop: planned rate of the failed step
  std::int32_t concurrency = 0;    // closed loop
  bool confirming = false;         // a confirm or soak step
  std::vector<std::string> codes;  // missed server-side checks, e.g. "ttft_p95"
};

struct TargetVerdict {
  Outcome outcome = Outcome::kInconclusive;
  std::string basis;      // "open_loop", "closed_loop", or "" when nothing was judged
  std::string statement;  // one line, e.g. "no qualified capacity: ttft_p95 failed at ..."
  std::vector<LevelFailure> failures;  // failed steps of the basis, in run order
  int client_bound_steps = 0;
  int insufficient_sample_steps = 0;
};

// steps: every judged step of the target (in run order); verdicts parallel to it.
TargetVerdict judge_target(std::span<const JudgedStep> steps, std::span<const StepVerdict> verdicts,
                           const QualifiedCapacity& capacity);

// The job's verdict over its targets: fail if any failed, else pass if every one passed (and
// there is at least one), else inconclusive.
Outcome overall_outcome(std::span<const TargetVerdict> targets);

}  // namespace llmcap::analysis
