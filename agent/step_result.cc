#include "agent/step_result.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace llmcap::agent {

LagStats exact_lag_stats(std::vector<std::int64_t> v) {
  LagStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.count = v.size();
  s.mean_ns = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  auto at = [&v](double q) {
    // Nearest-rank percentile.
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.p50_ns = at(0.50);
  s.p99_ns = at(0.99);
  s.max_ns = v.back();
  return s;
}

}  // namespace llmcap::agent
