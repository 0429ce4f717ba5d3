// Burst recovery (docs/metrics.md §5.5): after a burst (rate × k for T seconds), how long until the
// windowed P95 TTFT is back under its bound AND the backlog has drained to the pre-burst level.
// "Did not recover within the observation window" is a valid answer.
//
// Method:
// * Pre-burst backlog level = mean of the in-flight points in [burst_start − window, burst_start)
//   (0 when there are none).
// * Backlog drained at the first in-flight point t ≥ burst_end with
//   in_flight ≤ pre_level × (1 + backlog_relative_tolerance) + backlog_absolute_tolerance.
// * Latency recovered at the first t = burst_end + k·step_ns whose window [t, t + window) ends
//   within the observation and holds ≥ min_window_requests successful requests with
//   P95 TTFT ≤ the limit (windowed.h timeline, requests by t_intended).
// * Recovery time = max(latency recovered, backlog drained) − burst_end.
// Pure function; thread-safe. Throws std::invalid_argument naming a field for bad options.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/request_sample.h"
#include "analysis/sla.h"
#include "analysis/step_stats.h"

namespace llmcap::analysis {

struct BurstRecoveryInput {
  std::span<const RequestSample> samples;  // not owned
  std::vector<InFlightPoint> in_flight;
  std::int64_t burst_start_ns = 0;
  std::int64_t burst_end_ns = 0;
  std::int64_t observation_end_ns = 0;      // last time data was collected
  std::int64_t window_ns = 30'000'000'000;  // window of the P95 TTFT (and pre-burst level)
  std::int64_t step_ns = 1'000'000'000;     // slide of the window; resolution of the answer
  double ttft_p95_limit_ms = 1000;
  TtftDefinition ttft_definition = TtftDefinition::kIntended;
  double backlog_relative_tolerance = 0.10;
  double backlog_absolute_tolerance = 1.0;  // requests
  std::uint64_t min_window_requests = 5;
};

struct BurstRecovery {
  bool recovered = false;
  std::optional<std::int64_t> recovery_ns;           // from burst end; nullopt: did not recover
  std::optional<std::int64_t> latency_recovered_ns;  // from burst end
  std::optional<std::int64_t> backlog_drained_ns;    // from burst end
  double pre_burst_in_flight = 0;
  double peak_in_flight = 0;  // max in-flight point in [burst_start, observation_end]
};

BurstRecovery burst_recovery(const BurstRecoveryInput& input);

}  // namespace llmcap::analysis
