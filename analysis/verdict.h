// StepVerdict: pass / fail / inconclusive for one step (docs/metrics.md §4), one reason per check.
//
// Checks, each yielding a VerdictReason (stable machine-readable `code`, human `text`):
//   bound            one per SLA bound: measured percentile vs limit_ms (ITL from the pooled
//                    histogram; TTFT per SlaSpec::ttft_definition). No data → not evaluated.
//   error_rate       (failed + timed-out) / intended ≤ max_error_rate.
//   incomplete_rate  incomplete / intended ≤ max_error_rate (unfinished is not success).
//   completion_rate  open loop: successful+failed completions/s ≥ offered × (1 − tol).
//                    docs/metrics.md §4.1, "achieved rate within tolerance": the server kept up.
//   backlog          open loop: in-flight slope not growing (SlaSpec backlog_* thresholds). A
//                    miss needs all three: slope > backlog_growth_fraction × offered, net
//                    growth over the window > the noise floor, and slope > kBacklogSignificance
//                    × its autocorrelation-corrected standard error (step_stats.h); not
//                    evaluated without in-flight points.
//   -- client-side checks (a miss makes the step inconclusive, docs/metrics.md §4.2) --
//   send_rate        open loop: sent/s within tol of offered (the agent delivered the load).
//   schedule_lag     P99 DISPATCH lag of the window's requests ≤ max_schedule_lag_p99_ms, in
//                    wall-clock time (step_stats.h: connection set-up and warm-up excluded,
//                    never multiplied by a simulator's time_scale).
//   dropped_arrivals arrivals of the window dropped at the in-flight cap ≤ max_dropped_arrivals.
//   client_cpu       client CPU ≤ max_client_cpu_utilisation (not evaluated when unknown).
//   target_clock     simulated targets: the wall-clock time the simulator's loop gave up for
//                    running behind ≤ kMaxTargetClockLostShare of the window (a host too busy to
//                    keep the simulated GPU in real time measures the host, not the GPU).
//   client_resources no request of the step (warm-up and drain included) failed for the
//                    client's own descriptors, local ports or socket memory (kClientResources):
//                    the load the step meant was never offered. The text names the count, the
//                    errno and what to change (ulimit -n, ...).
//   -- evidence --
//   sample_count     intended ≥ min_requests. A miss is `insufficient_samples`, its own label:
//                    the step is inconclusive, and it does not say the client was the bottleneck.
// tol = max(rate_tolerance, 3 / √(offered × window_s)) (Poisson noise, see sla.h).
//
// Outcome precedence:
//   1. a latency bound missed by more than the client's own delay can explain (measured −
//      limit > StepStats::client_lag_max_ns, the largest dispatch lag in the window) → fail,
//      whatever the lag checks say (the reason is flagged beyond_client_lag) — unless
//      client_cpu, target_clock or client_resources missed: a client short of CPU reads late
//      and a simulator that lost time answers late, delays the dispatch lag does not measure,
//      and a client out of descriptors did not offer the step's load at all;
//   2. any client-side miss → inconclusive, `client_bound` (a saturated client inflates latency
//      from t_intended, so the remaining server misses cannot be trusted);
//   3. any server-side miss → fail;
//   4. too few requests → inconclusive, `insufficient_samples`;
//   5. any bound not evaluated for lack of data → inconclusive;
//   6. pass.
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
  kTargetClock,
  kClientResources,
};
inline constexpr CheckKind kLastCheckKind = CheckKind::kClientResources;
// How many standard errors an in-flight slope must exceed to count as growth (backlog): the
// one-sided 1e-5 point of Student's t with batches − 2 degrees of freedom (the batch-means
// error, step_stats.h): 8.91 with kTrendBatches = 10 batches (more when a batch is empty). So
// strict because a capacity is judged on tens of steps (a search, its truth grid): at the
// 0.1 % point, 300 random plans' truth grids failed a stationary queue somewhere in one plan of
// ten. Growth that matters is far beyond it: an overloaded queue's count climbs by (offered −
// capacity) every second. Measured on the twin by
// tests/unit/server/engine/search_property_test.cc.
inline constexpr double kBacklogSignificance = 8.907;
double backlog_significance(std::size_t batches);
// Most of a step's window a simulated target may lose to a busy host (see target_clock).
inline constexpr double kMaxTargetClockLostShare = 0.01;
// "bound", "error_rate", "incomplete_rate", "completion_rate", "backlog", "send_rate",
// "schedule_lag", "dropped_arrivals", "client_cpu", "sample_count", "target_clock",
// "client_resources".
std::string_view to_string(CheckKind k);
// True for the checks whose miss means the client was the bottleneck (not kSampleCount).
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
  // A missed latency bound whose excess is larger than the client's delay can explain.
  bool beyond_client_lag = false;
};

struct StepVerdict {
  Outcome outcome = Outcome::kInconclusive;
  std::vector<VerdictReason> reasons;  // bounds first (in SlaSpec order), then rules
  // Inconclusive because a client-side check missed (the load generator was the bottleneck).
  bool client_bound = false;
  // Inconclusive because fewer requests than min_requests belonged to the window.
  bool insufficient_samples = false;
  // Inconclusive because the window held too few request lifetimes to judge the in-flight
  // trend (defer_short_trend): the same step is judged again over this window (s).
  std::optional<double> rejudge_window_s;
  // Codes of the missed server-side checks (e.g. "ttft_p95", "error_rate").
  std::vector<std::string> missed_server_codes() const;
  // The reasons that decided the outcome (missed / not evaluated), for short displays.
  std::vector<const VerdictReason*> deciding() const;
};

StepVerdict judge_step(const StepStats& stats, const SlaSpec& sla);

// How many request lifetimes (τ, the window's mean E2E) an open-loop window must hold for its
// in-flight trend to be judged: the first τ fills the server, and the trend fitted over the
// other 4 tells a queue that keeps growing from a batching server's count still approaching its
// level (which rises for several lifetimes at moderate load, as a backlog does over a shorter
// span). Over fewer, the trend cannot be judged either way: a count still filling reads as
// growth, and an overloaded queue's growth hides in the slope's noise (requests that live 18 s
// in a 23 s window at 1.3 × capacity passed every check).
inline constexpr double kTrendLifetimes = 5;

// The window over which an open-loop step's trend can be judged, when the step's verdict rests
// on a trend judged over too short a window: the step passed, or failed on nothing but the
// in-flight trend (`backlog`, and `completion_rate`, whose shortfall is the same growth), in a
// window holding fewer than kTrendLifetimes of its lifetimes. Returns kTrendLifetimes × τ
// (whole seconds) or twice the window, whichever is longer (a count near a batching server's
// capacity settles over more than 5 early lifetimes: on the twin, 5 alone held 98 of 100
// seeds where this holds 99). nullopt otherwise: closed loop, inconclusive, a latency bound or the
// error rate missed (a window still filling understates latency, so that fail stands), or the
// window was long enough.
std::optional<double> trend_judging_window_s(const StepStats& stats, const StepVerdict& verdict);

// Defers such a verdict: when trend_judging_window_s() gives a window and the step may run at
// least 10 % longer than it did (max_window_s, the phase's max_duration_s), the verdict becomes
// inconclusive with rejudge_window_s = min(that window, max_window_s), and the backlog (and a
// missed completion_rate) reason reads not evaluated and says why; the caller runs the same step
// again over that window and its verdict stands. False (verdict unchanged) otherwise.
bool defer_short_trend(const StepStats& stats, StepVerdict& verdict, double max_window_s);

// Measured percentile (ns) of a bound from the stats; nullopt without data.
std::optional<double> measured_ns(const StepStats& stats, const SlaBound& bound,
                                  TtftDefinition ttft_definition);

}  // namespace llmcap::analysis
