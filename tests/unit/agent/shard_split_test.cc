// Tests of split_step() / shard_seed() / shard_share() (agent/shard_split.h): shares sum to the
// whole and differ by at most one, rates divide, seeds differ per shard and are stable.
#include "agent/shard_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "agent/arrival_process.h"

namespace llmcap::agent {
namespace {

TEST(ShardSplit, ConcurrencySharesSumAndDifferByAtMostOne) {
  for (std::int32_t total : {0, 1, 3, 4, 7, 64, 1001}) {
    for (std::int32_t n : {1, 2, 3, 4, 7, 16}) {
      std::int32_t sum = 0, lo = 1 << 30, hi = -1;
      for (std::int32_t k = 0; k < n; ++k) {
        const auto s = shard_share(total, n, k);
        sum += s;
        lo = std::min(lo, s);
        hi = std::max(hi, s);
      }
      EXPECT_EQ(sum, total) << total << "/" << n;
      EXPECT_LE(hi - lo, 1) << total << "/" << n;
    }
  }
  EXPECT_EQ(shard_share(10, 4, 0), 3);
  EXPECT_EQ(shard_share(10, 4, 1), 3);
  EXPECT_EQ(shard_share(10, 4, 2), 2);
  EXPECT_EQ(shard_share(10, 4, 4), 0);  // out of range
}

TEST(ShardSplit, ClosedLoopStepSplitsConcurrencyAndKeepsTheRest) {
  StepSpec spec;
  spec.load.kind = LoadKind::kClosed;
  spec.load.concurrency = 6;
  spec.warmup_s = 2;
  spec.duration_s = 9;
  spec.seed = 77;
  spec.target.base_url = "http://h:1";
  const auto shards = split_step(spec, 4);
  ASSERT_EQ(shards.size(), 4u);
  std::int32_t sum = 0;
  std::set<std::uint64_t> seeds;
  for (const auto& s : shards) {
    sum += s.load.concurrency;
    seeds.insert(s.seed);
    EXPECT_EQ(s.warmup_s, 2);
    EXPECT_EQ(s.duration_s, 9);
    EXPECT_EQ(s.target.base_url, "http://h:1");
    EXPECT_FALSE(is_idle_shard(s));
  }
  EXPECT_EQ(sum, 6);
  EXPECT_EQ(seeds.size(), 4u);
  EXPECT_EQ(shards[0].seed, 77u);  // shard 0 keeps the step's seed
  // Fewer clients than shards: the extra shards are idle.
  spec.load.concurrency = 2;
  const auto few = split_step(spec, 4);
  EXPECT_FALSE(is_idle_shard(few[1]));
  EXPECT_TRUE(is_idle_shard(few[2]));
  EXPECT_TRUE(is_idle_shard(few[3]));
}

TEST(ShardSplit, OpenLoopStepDividesEveryRateSegment) {
  StepSpec spec;
  spec.load.kind = LoadKind::kOpen;
  spec.load.rate = RateProfile::burst(8, 3, 5, 2);
  spec.load.in_flight_cap = 10;
  const auto shards = split_step(spec, 4);
  ASSERT_EQ(shards.size(), 4u);
  double total_cum = 0;
  std::int32_t caps = 0;
  for (const auto& s : shards) {
    EXPECT_DOUBLE_EQ(s.load.rate.rate_at(1), 2);
    EXPECT_DOUBLE_EQ(s.load.rate.rate_at(6), 6);
    EXPECT_FALSE(s.load.rate.validate());
    total_cum += s.load.rate.cumulative(20);
    caps += s.load.in_flight_cap;
    EXPECT_FALSE(is_idle_shard(s));
  }
  EXPECT_NEAR(total_cum, spec.load.rate.cumulative(20), 1e-9);
  EXPECT_EQ(caps, 10);
}

TEST(ShardSplit, ConstantArrivalsInterleaveIntoTheSingleAgentsSchedule) {
  StepSpec spec;
  spec.load.kind = LoadKind::kOpen;
  spec.load.rate = RateProfile::constant(8);
  spec.load.inter_arrival = InterArrival::kConstant;
  constexpr std::int64_t kEnd = 2'550'000'000;
  const auto single = ArrivalProcess(spec.load.rate, InterArrival::kConstant, 1, 1).until(kEnd);
  std::vector<std::int64_t> merged;
  for (const auto& s : split_step(spec, 4)) {
    const auto part = ArrivalProcess(s.load.rate, s.load.inter_arrival, 1, s.seed).until(kEnd);
    merged.insert(merged.end(), part.begin(), part.end());
  }
  std::sort(merged.begin(), merged.end());
  // The single agent's schedule (k/8 s, k = 1..20) without its first N − 1 = 3 arrivals
  // (t < 0.5 s, in the warm-up): every later arrival at the same time.
  ASSERT_EQ(single.size(), 20u);
  ASSERT_EQ(merged.size(), 17u);
  for (std::size_t i = 0; i < merged.size(); ++i) EXPECT_NEAR(merged[i], single[i + 3], 2) << i;
}

TEST(ShardSplit, SeedsAreStableAndDistinct) {
  EXPECT_EQ(shard_seed(42, 0), 42u);
  EXPECT_EQ(shard_seed(42, 3), shard_seed(42, 3));
  EXPECT_NE(shard_seed(42, 3), shard_seed(43, 3));
  std::set<std::uint64_t> seen;
  for (std::int32_t k = 0; k < 256; ++k) seen.insert(shard_seed(42, k));
  EXPECT_EQ(seen.size(), 256u);
}

TEST(ShardSplit, OneShardIsTheSpecItself) {
  StepSpec spec;
  spec.load.concurrency = 5;
  spec.seed = 9;
  const auto one = split_step(spec, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].load.concurrency, 5);
  EXPECT_EQ(one[0].seed, 9u);
}

}  // namespace
}  // namespace llmcap::agent
