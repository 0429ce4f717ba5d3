// Tests of merge_shards() (agent/shard_merge.h): a "single agent" result is partitioned into
// shards the way N agents would have produced it (each numbering its own samples from 0), and
// the merge must give back exactly what the single agent computed from the same samples.
#include "agent/shard_merge.h"

#include <gtest/gtest.h>

#include <random>

namespace llmcap::agent {
namespace {

analysis::RequestSample sample(std::mt19937_64& rng, std::int64_t t_intended) {
  analysis::RequestSample s;
  s.t_intended_ns = t_intended;
  s.t_send_ns = t_intended + static_cast<std::int64_t>(rng() % 2'000'000);
  s.connect_ns = rng() % 3 == 0 ? static_cast<std::int64_t>(rng() % 500'000) : -1;
  s.t_first_token_ns = s.t_send_ns + 50'000'000 + static_cast<std::int64_t>(rng() % 80'000'000);
  s.t_last_token_ns = s.t_first_token_ns + 300'000'000;
  s.t_end_ns = s.t_last_token_ns + 1000;
  s.output_tokens = 16;
  s.planned_output_tokens = 16;
  s.error = rng() % 10 == 0 ? analysis::ErrorClass::kHttp5xx : analysis::ErrorClass::kNone;
  return s;
}

struct Fixture {
  StepResult single;                // what one agent recorded
  std::vector<ShardResult> shards;  // the same samples as 3 agents would report them
};

Fixture make_merge_input(std::size_t n_samples, std::int32_t n_shards) {
  std::mt19937_64 rng(7);
  Fixture f;
  f.shards.resize(static_cast<std::size_t>(n_shards));
  for (std::int32_t k = 0; k < n_shards; ++k) {
    f.shards[k].shard_index = k;
    f.shards[k].region = k % 2 == 0 ? "eu" : "us";
    f.shards[k].result.completed = true;
    f.shards[k].result.window_start_ns = 1'000'000'000;
    f.shards[k].result.window_end_ns = 11'000'000'000 + k;  // within a clock offset
    f.shards[k].result.model = "m";
    f.shards[k].result.client_cpu_utilisation = 0.1 * (k + 1);
    f.shards[k].result.calibration.method = "tokenize";
    f.shards[k].result.in_flight_series = {{0, k + 1}, {100'000'000, 2 * (k + 1)}};
  }
  std::vector<std::int64_t> lags;
  for (std::size_t i = 0; i < n_samples; ++i) {
    auto s = sample(
        rng, static_cast<std::int64_t>(i) * 25'000'000 + static_cast<std::int64_t>(rng() % 1000));
    s.index = i;
    f.single.samples.push_back(s);
    f.single.response_ids.push_back("id-" + std::to_string(i));
    auto& shard = f.shards[i % static_cast<std::size_t>(n_shards)].result;
    analysis::RequestSample local = s;
    local.index = shard.samples.size();
    shard.samples.push_back(local);
    shard.response_ids.push_back("id-" + std::to_string(i));
    const double gap = 5e6 + static_cast<double>(rng() % 20'000'000);
    f.single.itl_ns.record(gap);
    shard.itl_ns.record(gap);
    ++shard.counts.intended;
    ++shard.counts.sent;
    ++f.single.counts.intended;
    ++f.single.counts.sent;
    if (s.ok()) {
      ++shard.counts.ok;
      shard.counts.output_tokens += 16;
      ++f.single.counts.ok;
      f.single.counts.output_tokens += 16;
    } else {
      ++shard.counts.failed;
      ++f.single.counts.failed;
    }
    lags.push_back(s.t_send_ns - s.t_intended_ns);
  }
  f.single.schedule_lag = exact_lag_stats(lags);
  return f;
}

TEST(ShardMerge, MergedSamplesAreTheSingleAgentsSamples) {
  Fixture f = make_merge_input(1000, 3);
  const MergedStep m = merge_shards(f.shards);
  ASSERT_EQ(m.result.samples.size(), f.single.samples.size());
  for (std::size_t i = 0; i < m.result.samples.size(); ++i) {
    const auto& a = m.result.samples[i];
    const auto& b = f.single.samples[i];
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.t_intended_ns, b.t_intended_ns);
    EXPECT_EQ(a.t_send_ns, b.t_send_ns);
    EXPECT_EQ(a.t_first_token_ns, b.t_first_token_ns);
    EXPECT_EQ(a.error, b.error);
    EXPECT_EQ(m.result.response_ids[i], f.single.response_ids[i]);
    EXPECT_EQ(m.sample_regions[i], i % 3 == 1 ? "us" : "eu");
  }
}

TEST(ShardMerge, CountsHistogramsAndLagsEqualTheSingleAgents) {
  Fixture f = make_merge_input(1000, 3);
  const MergedStep m = merge_shards(f.shards);
  EXPECT_EQ(m.result.counts.intended, f.single.counts.intended);
  EXPECT_EQ(m.result.counts.sent, f.single.counts.sent);
  EXPECT_EQ(m.result.counts.ok, f.single.counts.ok);
  EXPECT_EQ(m.result.counts.failed, f.single.counts.failed);
  EXPECT_EQ(m.result.counts.output_tokens, f.single.counts.output_tokens);
  EXPECT_EQ(m.result.itl_ns.count(), f.single.itl_ns.count());
  EXPECT_EQ(m.result.itl_ns.buckets().size(), f.single.itl_ns.buckets().size());
  for (double q : {0.5, 0.9, 0.99})
    EXPECT_DOUBLE_EQ(m.result.itl_ns.quantile(q), f.single.itl_ns.quantile(q));
  EXPECT_EQ(m.result.itl_ns.min(), f.single.itl_ns.min());
  EXPECT_EQ(m.result.itl_ns.max(), f.single.itl_ns.max());
  EXPECT_EQ(m.result.schedule_lag.count, f.single.schedule_lag.count);
  EXPECT_EQ(m.result.schedule_lag.p50_ns, f.single.schedule_lag.p50_ns);
  EXPECT_EQ(m.result.schedule_lag.p99_ns, f.single.schedule_lag.p99_ns);
  EXPECT_EQ(m.result.schedule_lag.max_ns, f.single.schedule_lag.max_ns);
  EXPECT_NEAR(m.result.schedule_lag.mean_ns, f.single.schedule_lag.mean_ns, 1e-3);
  EXPECT_TRUE(m.result.completed);
  EXPECT_EQ(m.result.model, "m");
  EXPECT_EQ(m.result.window_start_ns, 1'000'000'000);
  EXPECT_EQ(m.result.window_end_ns, 11'000'000'002);
}

TEST(ShardMerge, InFlightIsSummedOnACommonGridAndCpuIsPerShard) {
  Fixture f = make_merge_input(30, 3);
  f.shards[2].result.in_flight_series = {{0, 3}, {50'000'000, 9}, {250'000'000, 1}};
  const MergedStep m = merge_shards(f.shards, 100'000'000);
  // Grid 0, 100 ms, 200 ms, 250 ms (the last point): shard values 1+2+3, 2+4+9, 2+4+9, 2+4+1.
  ASSERT_EQ(m.result.in_flight_series.size(), 4u);
  EXPECT_EQ(m.result.in_flight_series[0], (std::pair<std::int64_t, std::int32_t>{0, 6}));
  EXPECT_EQ(m.result.in_flight_series[1].second, 15);
  EXPECT_EQ(m.result.in_flight_series[2].second, 15);
  EXPECT_EQ(m.result.in_flight_series[3], (std::pair<std::int64_t, std::int32_t>{250'000'000, 7}));
  ASSERT_EQ(m.shards.size(), 3u);
  EXPECT_DOUBLE_EQ(m.shards[0].client_cpu_utilisation, 0.1);
  EXPECT_DOUBLE_EQ(m.shards[2].client_cpu_utilisation, 0.30000000000000004);
  EXPECT_DOUBLE_EQ(m.result.client_cpu_utilisation, m.shards[2].client_cpu_utilisation);
  EXPECT_EQ(m.shards[1].region, "us");
  EXPECT_EQ(m.shards[1].samples, 10u);
}

TEST(ShardMerge, AFarOffTimePointCannotSizeTheMergedSeries) {
  // Issue 24 #1: one point at 2^62 ns once made the merge build a grid from 0 to it (GBs).
  // The work is bounded by the number of points: the grid is coarsened instead.
  Fixture f = make_merge_input(30, 3);
  f.shards[2].result.in_flight_series = {{0, 3}, {std::int64_t{1} << 62, 1}};
  std::size_t points = 0;
  for (const auto& s : f.shards) points += s.result.in_flight_series.size();
  const MergedStep m = merge_shards(f.shards, 100'000'000);
  EXPECT_LE(m.result.in_flight_series.size(), 4 * points + 100'001);
  ASSERT_FALSE(m.result.in_flight_series.empty());
  EXPECT_EQ(m.result.in_flight_series.back().first, std::int64_t{1} << 62);
  EXPECT_EQ(m.result.in_flight_series.front().first, 0);
}

TEST(ShardMerge, AShardErrorOrIncompleteShardShowsInTheMerge) {
  Fixture f = make_merge_input(30, 3);
  f.shards[1].result.completed = false;
  f.shards[2].result.fatal_error = "model listing failed";
  const MergedStep m = merge_shards(f.shards);
  EXPECT_FALSE(m.result.completed);
  EXPECT_EQ(m.result.fatal_error, "shard 2: model listing failed");
}

TEST(ShardMerge, TiesInIntendedTimeAreOrderedByShardThenIndex) {
  std::vector<ShardResult> shards(2);
  for (int k = 0; k < 2; ++k) {
    shards[k].shard_index = 1 - k;  // given out of order
    for (int i = 0; i < 2; ++i) {
      analysis::RequestSample s;
      s.index = i;
      s.t_intended_ns = 100;
      s.t_send_ns = 100 + i + 10 * (1 - k);
      shards[k].result.samples.push_back(s);
    }
  }
  const MergedStep m = merge_shards(shards);
  ASSERT_EQ(m.result.samples.size(), 4u);
  EXPECT_EQ(m.result.samples[0].t_send_ns, 100);  // shard 0, index 0
  EXPECT_EQ(m.result.samples[1].t_send_ns, 101);
  EXPECT_EQ(m.result.samples[2].t_send_ns, 110);  // shard 1
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(m.result.samples[i].index, i);
}

}  // namespace
}  // namespace llmcap::agent
