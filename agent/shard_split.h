// split_step(): divides one step of load into N shard steps for N agent processes (scale-out,
// issue 11), so that together they offer the load one agent would have offered:
//   closed loop  concurrency C → ⌊C/N⌋ or ⌈C/N⌉ clients per shard (the first C mod N shards get
//                one more; sums to C; a shard gets 0 clients when C < N and then runs nothing);
//   open loop    rate profile R(t) → R(t)/N per shard (every segment divided), in-flight cap
//                split like concurrency (at least 1 each); with constant spacing shard k's
//                profile starts k/R(0) later, so the shards interleave into one 1/R cadence;
//   seed         shard_seed(step seed, k): different prompts and arrivals per shard, the same
//                for the same plan every run (shard 0 keeps the step's own seed).
// Everything else (target, workload, warm-up, duration, drain, deadlines) is copied.
// Sample indices: each shard numbers its own samples from 0; merge_shards() (shard_merge.h)
// re-numbers the union in order of intention, so merged indices are disjoint and dense.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "agent/step_spec.h"

namespace llmcap::agent {

// The seed of shard `shard_index` of a step seeded `step_seed` (SplitMix64 of both).
std::uint64_t shard_seed(std::uint64_t step_seed, std::int32_t shard_index);

// Clients (or in-flight cap) of shard k when `total` is split over `shards` as evenly as
// possible. shards ≥ 1, 0 ≤ k < shards.
std::int32_t shard_share(std::int32_t total, std::int32_t shards, std::int32_t k);

// True when shard spec `s` offers no load (a closed-loop shard with 0 clients): the agent
// uploads an empty result without running it.
bool is_idle_shard(const StepSpec& s);

// N shard specs of `spec` (N = shards ≥ 1; 1 returns the spec itself).
std::vector<StepSpec> split_step(const StepSpec& spec, std::int32_t shards);

}  // namespace llmcap::agent
