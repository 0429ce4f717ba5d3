#include "analysis/burst.h"

#include <algorithm>
#include <stdexcept>

#include "analysis/windowed.h"

namespace llmcap::analysis {

BurstRecovery burst_recovery(const BurstRecoveryInput& in) {
  if (in.window_ns <= 0) throw std::invalid_argument("window_ns: must be positive");
  if (in.step_ns <= 0) throw std::invalid_argument("step_ns: must be positive");
  if (in.burst_end_ns < in.burst_start_ns) {
    throw std::invalid_argument("burst_end_ns: must not be before burst_start_ns");
  }
  if (in.observation_end_ns <= in.burst_end_ns) {
    throw std::invalid_argument("observation_end_ns: must be after burst_end_ns");
  }
  BurstRecovery out;

  double pre_sum = 0;
  std::size_t pre_n = 0;
  for (const auto& p : in.in_flight) {
    if (p.t_ns >= in.burst_start_ns - in.window_ns && p.t_ns < in.burst_start_ns) {
      pre_sum += p.in_flight;
      ++pre_n;
    }
    if (p.t_ns >= in.burst_start_ns && p.t_ns <= in.observation_end_ns) {
      out.peak_in_flight = std::max(out.peak_in_flight, p.in_flight);
    }
  }
  out.pre_burst_in_flight = pre_n > 0 ? pre_sum / static_cast<double>(pre_n) : 0;
  const double drained_level =
      out.pre_burst_in_flight * (1 + in.backlog_relative_tolerance) + in.backlog_absolute_tolerance;

  std::vector<InFlightPoint> after;
  for (const auto& p : in.in_flight) {
    if (p.t_ns >= in.burst_end_ns && p.t_ns <= in.observation_end_ns) after.push_back(p);
  }
  std::sort(after.begin(), after.end(), [](auto& a, auto& b) { return a.t_ns < b.t_ns; });
  for (const auto& p : after) {
    if (p.in_flight <= drained_level) {
      out.backlog_drained_ns = p.t_ns - in.burst_end_ns;
      break;
    }
  }

  if (in.burst_end_ns + in.window_ns <= in.observation_end_ns) {
    WindowOptions w{in.burst_end_ns, in.observation_end_ns, in.window_ns};
    for (const auto& point : windowed_p95_ttft(in.samples, w, in.ttft_definition, in.step_ns)) {
      if (point.end_ns - point.start_ns < in.window_ns) break;  // partial window: not judged
      if (point.count >= in.min_window_requests && point.p95_ttft_ns &&
          *point.p95_ttft_ns <= in.ttft_p95_limit_ms * 1e6) {
        out.latency_recovered_ns = point.start_ns - in.burst_end_ns;
        break;
      }
    }
  }

  if (out.latency_recovered_ns && out.backlog_drained_ns) {
    out.recovered = true;
    out.recovery_ns = std::max(*out.latency_recovered_ns, *out.backlog_drained_ns);
  }
  return out;
}

}  // namespace llmcap::analysis
