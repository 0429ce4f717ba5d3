// SlaSpec: the service-level agreement a step is judged against (docs/metrics.md §4), plus the
// thresholds of the verdict rules, and the per-request SLO check used for goodput (§3.3 there).
//
// A bound says "percentile P of metric M must be ≤ limit_ms", for any P with 0 < P < 100
// (the step statistics compute the ones beyond P50/P90/P95/P99/P99.9 on demand). Every threshold
// has a documented default; validate() checks a spec once (e.g. when a plan is accepted) and names
// the offending field.
//
// Plain values: safe to copy and share read-only between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/request_sample.h"

namespace llmcap::analysis {

enum class SlaMetric : std::uint8_t {
  kTtft,         // TTFT; which one (intended / service) is SlaSpec::ttft_definition
  kTtftService,  // ttft_service = first token − t_send, always (docs/metrics.md §1.4)
  kTpot,         // per-request TPOT distribution
  kItl,          // pooled inter-token gaps (step level); per request: its largest gap
  kE2e,          // end-to-end latency from t_intended
};
std::string_view to_string(SlaMetric m);  // "ttft", "ttft_service", "tpot", "itl", "e2e"
std::optional<SlaMetric> parse_sla_metric(std::string_view s);

// Which TTFT a kTtft bound (and goodput) uses. Default from t_intended (docs/metrics.md §1.4:
// coordinated omission would otherwise hide queueing).
enum class TtftDefinition : std::uint8_t { kIntended, kService };
std::string_view to_string(TtftDefinition d);  // "intended", "service"
std::optional<TtftDefinition> parse_ttft_definition(std::string_view s);

struct SlaBound {
  SlaMetric metric = SlaMetric::kTtft;
  double percentile = 95;  // 0 < percentile < 100
  double limit_ms = 1000;  // the percentile must be ≤ this
};

struct SlaSpec {
  // Latency bounds; all must hold for a pass. An empty list judges only the rules below.
  std::vector<SlaBound> bounds;
  // Error rate = (failed + timed-out) / intended must be ≤ this (docs/metrics.md §2.4). The same
  // limit applies to the share of requests still incomplete at step end.
  double max_error_rate = 0.01;
  TtftDefinition ttft_definition = TtftDefinition::kIntended;

  // Open loop: completed requests/s and sent requests/s must each be within this relative
  // tolerance of the offered rate. The effective tolerance is widened to 3/√(offered × window)
  // when that is larger, because a Poisson count of expected size N has a stddev of √N.
  double rate_tolerance = 0.05;
  // The client is the bottleneck (step inconclusive) when the P99 schedule lag exceeds this.
  double max_schedule_lag_p99_ms = 50;
  // ... or when the load generator's CPU utilisation (0..1 of the cores it used) exceeds this.
  double max_client_cpu_utilisation = 0.9;
  // ... or when more than this many arrivals were dropped at the in-flight cap.
  std::uint64_t max_dropped_arrivals = 0;
  // Open loop: the backlog is "growing" when the in-flight least-squares slope exceeds
  // backlog_growth_fraction × offered rate AND the net growth over the window
  // (slope × window length) exceeds max(backlog_growth_min_requests, 3√(offered × mean E2E)).
  // The second guard keeps
  // noise at low rates from failing a step.
  double backlog_growth_fraction = 0.02;
  double backlog_growth_min_requests = 3;
  // Fewer requests intended in the window than this: inconclusive (too few samples for the
  // tail percentiles to mean anything; 100 samples give P95 from the 5 slowest).
  std::uint64_t min_requests = 100;
};

// nullopt when valid, else a message naming the field, e.g. "bounds[1].percentile: must be
// between 0 and 100, both excluded (got 100)".
std::optional<std::string> validate(const SlaSpec& spec);

// A spec with the docs/metrics.md §4 example bounds: P95 TTFT ≤ 1000 ms, P95 TPOT ≤ 35 ms.
SlaSpec example_interactive_sla();

// This request's own value for a metric, in ns (docs/metrics.md §1.4): TTFT per the definition,
// ttft_service, TPOT, its largest inter-token gap (max_itl_ns) for kItl, E2E. nullopt when the
// request has no such value (no token, fewer than 2 tokens for TPOT/ITL).
std::optional<double> request_metric_ns(const RequestSample& sample, SlaMetric metric,
                                        TtftDefinition ttft_definition);

// Per-request SLO check for goodput (docs/metrics.md §3.3): true when the request succeeded and
// each of its own values is ≤ every bound's limit (the bound's percentile is irrelevant per
// request). A request without a TTFT or E2E value misses (the user never got output); a missing
// TPOT or ITL (fewer than 2 tokens/events) is "not applicable" and holds.
bool meets_slos(const RequestSample& sample, const SlaSpec& spec);

}  // namespace llmcap::analysis
