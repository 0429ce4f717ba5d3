#include "agent/shard_split.h"

#include <algorithm>

namespace llmcap::agent {

std::uint64_t shard_seed(std::uint64_t step_seed, std::int32_t shard_index) {
  if (shard_index == 0) return step_seed;
  // SplitMix64 finaliser over seed + golden-ratio multiple of the index: well-mixed, so
  // neighbouring shards' arrival and prompt streams are unrelated.
  std::uint64_t z = step_seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(shard_index);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::int32_t shard_share(std::int32_t total, std::int32_t shards, std::int32_t k) {
  if (shards <= 0 || k < 0 || k >= shards || total <= 0) return 0;
  return total / shards + (k < total % shards ? 1 : 0);
}

bool is_idle_shard(const StepSpec& s) {
  return s.load.kind == LoadKind::kClosed && s.load.concurrency <= 0;
}

std::vector<StepSpec> split_step(const StepSpec& step, std::int32_t shards) {
  // An open-loop request-count window becomes its planned length, the same for every shard
  // (each at R/N carries about N/shards of its arrivals; the shard codec carries no count). A
  // closed-loop one cannot be split (each shard would end on its own count): the plan reader
  // refuses it with agents.
  StepSpec spec = step;
  if (spec.load.kind == LoadKind::kOpen && spec.window_requests > 0) {
    spec.duration_s = planned_window_s(spec);
    spec.window_requests = 0;
  }
  if (shards <= 1) return {spec};
  std::vector<StepSpec> out;
  out.reserve(static_cast<std::size_t>(shards));
  const double n = static_cast<double>(shards);
  for (std::int32_t k = 0; k < shards; ++k) {
    StepSpec s = spec;
    s.seed = shard_seed(spec.seed, k);
    if (spec.content_seed != 0) s.content_seed = shard_seed(spec.content_seed, k);
    if (spec.load.kind == LoadKind::kClosed) {
      s.load.concurrency = shard_share(spec.load.concurrency, shards, k);
    } else {
      std::vector<RateProfile::Segment> segs = spec.load.rate.segments();
      for (auto& seg : segs) {
        seg.rate_start /= n;
        seg.rate_end /= n;
      }
      // Constant spacing: N shards at R/N with the same phase would send N requests at once
      // every N/R s. Shard k starts k/R later (a zero-rate prefix), so together they send one
      // every 1/R s like a single agent (less its first N − 1 arrivals, which fall in the
      // first N/R s). Random arrivals need no phase: N Poisson(R/N) streams are Poisson(R).
      const double r0 = spec.load.rate.rate_at(0);
      if (spec.load.inter_arrival == InterArrival::kConstant && k > 0 && r0 > 0) {
        const double shift_s = static_cast<double>(k) / r0;
        for (auto& seg : segs) {
          seg.start_s += shift_s;
          seg.end_s += shift_s;
        }
        segs.insert(segs.begin(), RateProfile::Segment{0, shift_s, 0, 0});
      }
      s.load.rate = RateProfile::from_segments(std::move(segs));
      s.load.in_flight_cap = std::max(1, shard_share(spec.load.in_flight_cap, shards, k));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace llmcap::agent
