// StepVerdict: pass / fail / inconclusive for one step (DOMAIN §3), with one reason per check.
//
// Checks, each yielding a VerdictReason (stable machine-readable `code`, human `text`):
//   bound            one per SLA bound: measured percentile vs limit_ms (ITL from the pooled
//                    histogram; TTFT per SlaSpec::ttft_definition). No data → not evaluated.
//   error_rate       (failed + timed-out) / intended ≤ max_error_rate.
//   incomplete_rate  incomplete / intended ≤ max_error_rate (unfinished is not success).
//   completion_rate  open loop: successful+failed completions/s ≥ offered × (1 − tol).
//                    DOMAIN §3's "achieved rate within tolerance": the server kept up.
//   backlog          open loop: in-flight slope not growing (SlaSpec backlog_* thresholds);
//                    not evaluated without in-flight points.
//   -- client-side checks (a miss makes the step inconclusive, DOMAIN §3) --
//   send_rate        open loop: sent/s within tol of offered (the agent delivered the load).
//   schedule_lag     P99 schedule lag ≤ max_schedule_lag_p99_ms.
//   dropped_arrivals dropped arrivals at the in-flight cap ≤ max_dropped_arrivals.
//   client_cpu       client CPU ≤ max_client_cpu_utilisation (not evaluated when unknown).
//   sample_count     intended ≥ min_requests.
// tol = max(rate_tolerance, 3 / √(offered × window_s)) (Poisson noise, see sla.h).
//
// Outcome precedence: any client-side miss → inconclusive (a saturated client inflates
// latency from t_intended, so server misses cannot be trusted); else any server-side miss →
// fail; else any bound not evaluated for lack of data → inconclusive; else pass.
// Closed-loop steps (offered_rate_rps == 0) skip the rate and backlog checks (the in-flight
// count is fixed by construction); those reasons are reported with status kNotApplicable.
//
// margin: for "≤ limit" checks, limit − measured (positive: held by that much; negative:
// missed by that much); for "≥" checks, measured − limit. Same unit as measured/limit: ms
// for latencies, a fraction for rates and shares, requests/s for rates, a count for counts.
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/sla.h"
#include "analysis/step_stats.h"

namespace llmcap::analysis {

enum class Outcome : std::uint8_t { kPass, kFail, kInconclusive };
std::string_view to_string(Outcome o);  // "pass", "fail", "inconclusive"

enum class CheckKind : std::uint8_t {
  kBound,
  kErrorRate,
  kIncompleteRate,
  kCompletionRate,
  kBacklog,
  kSendRate,
  kScheduleLag,
  kDroppedArrivals,
  kClientCpu,
  kSampleCount,
};
// "bound", "error_rate", "incomplete_rate", "completion_rate", "backlog", "send_rate",
// "schedule_lag", "dropped_arrivals", "client_cpu", "sample_count".
std::string_view to_string(CheckKind k);
// True for the checks whose miss means the client was the bottleneck or evidence is thin.
bool is_client_side(CheckKind k);

enum class CheckStatus : std::uint8_t { kHeld, kMissed, kNotEvaluated, kNotApplicable };
std::string_view to_string(CheckStatus s);  // "held", "missed", "not_evaluated", "not_applicable"

struct VerdictReason {
  CheckKind kind = CheckKind::kBound;
  CheckStatus status = CheckStatus::kHeld;
  // Stable code: "<kind>" or for bounds "<metric>_p<percentile>" e.g. "ttft_p95", "e2e_p99.9".
  std::string code;
  std::optional<SlaBound> bound;  // set for kBound
  std::optional<double> measured;
  double limit = 0;
  std::optional<double> margin;
  std::string text;  // one line for humans
};

struct StepVerdict {
  Outcome outcome = Outcome::kInconclusive;
  std::vector<VerdictReason> reasons;  // bounds first (in SlaSpec order), then rules
  // The reasons that decided the outcome (missed / not evaluated), for short displays.
  std::vector<const VerdictReason*> deciding() const;
};

StepVerdict judge_step(const StepStats& stats, const SlaSpec& sla);

// Measured percentile (ns) of a bound from the stats; nullopt without data.
std::optional<double> measured_ns(const StepStats& stats, const SlaBound& bound,
                                  TtftDefinition ttft_definition);

}  // namespace llmcap::analysis
