// merge_shards(): the one step result of N shard results (scale-out, issue 11) — exactly what
// a single agent would have computed from the same samples:
//   samples        the union, ordered by intended send time (ties: shard, then the shard's own
//                  index) and re-numbered 0..n-1 in that order (a single agent's index is its
//                  order of intention); response ids and region labels stay parallel;
//   counts         summed; dropped arrivals and connections summed;
//   ITL            the shards' histograms merged (LogHistogram::merge is exact: same buckets);
//   schedule/dispatch lag  recomputed from the merged samples (t_send − t_intended, minus
//                  connect + TLS), the same nearest-rank statistics StepRunner computes;
//   timer lag      not in the samples: count summed, mean count-weighted, p50/p99/max the
//                  largest of the shards' (an upper bound);
//   in-flight      the shards' series summed on a common grid (each shard's last value at or
//                  before each grid point);
//   window         the earliest window start and latest window end (shards start together,
//                  so these agree within the clock offset); end = the latest shard end;
//   client CPU     reported per shard; the merged figure is the busiest shard's (each shard
//                  is a separate client, and one saturated client already biases latency,
//                  docs/metrics.md §4).
// Times in shard results are nanoseconds since each shard's own step start; the shards start
// at one wall-clock instant, so the epochs agree within the measured clock offset.
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/step_result.h"

namespace llmcap::agent {

struct ShardResult {
  std::int32_t shard_index = 0;
  std::string region;  // "" when the plan gave no regions
  StepResult result;
};

struct ShardSummary {
  std::int32_t shard_index = 0;
  std::string region;
  std::uint64_t samples = 0;
  bool completed = false;
  std::string fatal_error;
  double client_cpu_utilisation = 0;
  CpuUsage cpu;
  LagStats dispatch_lag;
  std::int64_t end_ns = 0;
};

struct MergedStep {
  StepResult result;
  std::vector<std::string> sample_regions;  // parallel to result.samples
  std::vector<ShardSummary> shards;         // by shard index
};

// in_flight_grid_ns: spacing of the merged in-flight series (the shards' sampling period).
MergedStep merge_shards(std::vector<ShardResult> shards,
                        std::int64_t in_flight_grid_ns = 100'000'000);

}  // namespace llmcap::agent
