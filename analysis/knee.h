// Knee of a concurrency sweep (docs/metrics.md §5.3): the concurrency after which adding streams
// stops paying — the marginal throughput gain per added stream falls below a fraction of the
// initial per-stream gain while latency rises.
//
// Method: points sorted by concurrency. Initial per-stream gain g0 = T(N0) / N0 (what one
// stream adds from zero at the lowest level). Marginal gain between consecutive levels
// g_i = (T_i − T_{i−1}) / (N_i − N_{i−1}). The knee is N_{i−1} for the first i with
// g_i < gain_fraction × g0 AND latency_i > latency_{i−1}. gain_fraction defaults to 0.1:
// an added stream then buys less than a tenth of what the first one did. When no level
// qualifies the knee is the last (highest) level and `found` is false (sweep ended before
// the knee: extend it). Latency is whatever the caller uses (P95 E2E or mean TPOT).
// Pure function; thread-safe. Throws std::invalid_argument for a bad option.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace llmcap::analysis {

struct SweepPoint {
  std::int32_t concurrency = 0;
  double output_tokens_per_s = 0;
  double latency_ns = 0;   // rises with load (e.g. P95 E2E or mean TPOT)
  double mean_e2e_ns = 0;  // for Little's law (capacity_search.h); 0 when unknown
};

struct KneeOptions {
  double gain_fraction = 0.1;
};

struct Knee {
  bool found = false;                  // false: the sweep ended before the knee
  std::size_t index = 0;               // into the sorted points
  SweepPoint point;                    // the knee level
  double initial_gain_per_stream = 0;  // g0, tokens/s per stream
  double gain_after_per_stream = 0;    // marginal gain past the knee (0 when !found)
};

// nullopt when points is empty or the lowest concurrency is ≤ 0.
std::optional<Knee> find_knee(std::vector<SweepPoint> points, const KneeOptions& options = {});

}  // namespace llmcap::analysis
