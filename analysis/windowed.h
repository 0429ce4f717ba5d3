// Windowed compliance (soak, bursts): cut a run into fixed windows and judge each SLA bound in
// each window; plus a windowed P95 TTFT timeline.
//
// Choices:
// * Windows are [start + k·w, start + (k+1)·w) for the full windows that fit in [start, end);
//   a trailing remainder shorter than w is dropped, unless it is the only window.
// * A request belongs to the window holding its t_intended (as in step_stats.h); latency
//   percentiles use its successful requests (Summary method, summary.h).
// * ITL per window pools the gaps of the requests' token_times_ns (when recorded); without
//   them the ITL bound has no data in that window.
// * A bound "held" in a window when its percentile ≤ limit; windows with no data for a bound
//   are excluded from that bound's share. The error-rate rule is reported as one more line;
//   requests that failed for the client's own resources (kClientResources) are left out.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/request_sample.h"
#include "analysis/sla.h"

namespace llmcap::analysis {

struct WindowOptions {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t window_ns = 30'000'000'000;  // 30 s
};

struct WindowBoundResult {
  std::optional<double> measured_ns;  // nullopt: no data in this window
  bool held = false;
};

struct WindowResult {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t intended = 0;
  std::uint64_t completed_ok = 0;
  double error_rate = 0;                  // (failed + timed out) / intended; 0 when none
  std::vector<WindowBoundResult> bounds;  // same order as SlaSpec::bounds
  bool all_held = false;                  // every bound with data held and error rate held
};

struct BoundCompliance {
  SlaBound bound;
  std::uint64_t windows_with_data = 0;
  std::uint64_t windows_held = 0;
  double share_held = 0;  // windows_held / windows_with_data; 0 when none had data
};

struct WindowedCompliance {
  std::vector<WindowResult> windows;
  std::vector<BoundCompliance> bounds;  // same order as SlaSpec::bounds
  double error_rate_share_held = 0;     // share of windows with requests whose error rate held
  double all_held_share = 0;            // share of windows (with requests) where all held
};

// Throws std::invalid_argument naming the field when window_ns ≤ 0 or end ≤ start.
std::vector<std::pair<std::int64_t, std::int64_t>> make_windows(const WindowOptions& options);

WindowedCompliance windowed_compliance(std::span<const RequestSample> samples, const SlaSpec& sla,
                                       const WindowOptions& options);

struct TimelinePoint {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t count = 0;            // successful requests with a TTFT in the window
  std::optional<double> p95_ttft_ns;  // nullopt when count == 0
};

// P95 TTFT (per definition) of requests intended in [t, t + window_ns), for t = start,
// start + step_ns, ... while t + window_ns ≤ end (at least one point). step_ns = window_ns
// gives the fixed windows above; smaller steps give a sliding timeline.
std::vector<TimelinePoint> windowed_p95_ttft(std::span<const RequestSample> samples,
                                             const WindowOptions& options,
                                             TtftDefinition ttft_definition,
                                             std::int64_t step_ns = 0);

}  // namespace llmcap::analysis
