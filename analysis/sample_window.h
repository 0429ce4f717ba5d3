// How long an open-loop window must be to hold a step's min_requests (docs/metrics.md §5.2):
// min_requests + 3√min_requests requests on average at the offered rate, so that a Poisson
// count falls short of min_requests about once in a thousand steps. Whole seconds, rounded up.
// The executor lengthens windows to this (up to max_duration_s); validation warns from it.
#pragma once

#include <cmath>
#include <cstdint>

namespace llmcap::analysis {

// rate_rps > 0.
inline double window_for_min_requests_s(double rate_rps, std::uint64_t min_requests) {
  const double m = static_cast<double>(min_requests);
  return std::ceil((m + 3 * std::sqrt(m)) / rate_rps);
}

}  // namespace llmcap::analysis
