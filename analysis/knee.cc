#include "analysis/knee.h"

#include <algorithm>
#include <stdexcept>

namespace llmcap::analysis {

std::optional<Knee> find_knee(std::vector<SweepPoint> points, const KneeOptions& options) {
  if (!(options.gain_fraction > 0 && options.gain_fraction < 1)) {
    throw std::invalid_argument("gain_fraction: must be in (0, 1)");
  }
  if (points.empty()) return std::nullopt;
  std::sort(points.begin(), points.end(),
            [](const auto& a, const auto& b) { return a.concurrency < b.concurrency; });
  if (points.front().concurrency <= 0) return std::nullopt;
  Knee knee;
  knee.initial_gain_per_stream = points.front().output_tokens_per_s / points.front().concurrency;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const int added = points[i].concurrency - points[i - 1].concurrency;
    if (added <= 0) continue;  // duplicate level: ignore the repeat
    const double gain = (points[i].output_tokens_per_s - points[i - 1].output_tokens_per_s) / added;
    if (gain < options.gain_fraction * knee.initial_gain_per_stream &&
        points[i].latency_ns > points[i - 1].latency_ns) {
      knee.found = true;
      knee.index = i - 1;
      knee.point = points[i - 1];
      knee.gain_after_per_stream = gain;
      return knee;
    }
  }
  knee.index = points.size() - 1;
  knee.point = points.back();
  return knee;
}

}  // namespace llmcap::analysis
