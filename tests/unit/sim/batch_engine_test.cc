#include "sim/batch_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "sim/profile_catalog.h"

namespace llmcap::sim {
namespace {

Roofline roofline_4090() {
  const ProfileCatalog c = ProfileCatalog::builtin();
  return Roofline(*c.model("llama-3.1-8b"), *c.hardware("rtx4090-48g"), analysis::Dtype::kBf16);
}

EngineConfig config(std::int64_t blocks, std::int64_t seqs = 256, std::int64_t budget = 2048) {
  EngineConfig c;
  c.kv_pool_blocks = blocks;
  c.max_num_seqs = seqs;
  c.max_num_batched_tokens = budget;
  return c;
}

bool contains(const std::vector<std::uint64_t>& v, std::uint64_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

TEST(BatchEngineTest, SingleRequestPrefillThenDecode) {
  BatchEngine e(roofline_4090(), config(1000));
  ASSERT_TRUE(e.add({1, 100, 3}));
  EXPECT_EQ(e.waiting(), 1);
  StepOutcome s = e.step();  // prefill 100 tokens → first token
  EXPECT_EQ(s.scheduled_tokens, 100);
  EXPECT_TRUE(contains(s.emitted, 1));
  EXPECT_EQ(e.running(), 1);
  EXPECT_EQ(e.free_blocks(), 1000 - 7);  // ceil(100 / 16)
  s = e.step();
  EXPECT_EQ(s.scheduled_tokens, 1);
  s = e.step();
  EXPECT_TRUE(contains(s.finished, 1));
  EXPECT_TRUE(e.idle());
  EXPECT_EQ(e.free_blocks(), 1000);
}

TEST(BatchEngineTest, ChunkedPrefillSplitsLongPrompts) {
  BatchEngine e(roofline_4090(), config(1000, 256, 512));
  ASSERT_TRUE(e.add({1, 1300, 2}));
  EXPECT_EQ(e.step().scheduled_tokens, 512);
  EXPECT_EQ(e.step().scheduled_tokens, 512);
  const StepOutcome third = e.step();
  EXPECT_EQ(third.scheduled_tokens, 276);
  EXPECT_TRUE(contains(third.emitted, 1));  // first token only after the whole prompt
}

TEST(BatchEngineTest, DecodesShareOneStepAndBudgetAdmitsNewPrefill) {
  BatchEngine e(roofline_4090(), config(10000, 256, 64));
  ASSERT_TRUE(e.add({1, 10, 5}));
  ASSERT_TRUE(e.add({2, 10, 5}));
  StepOutcome s = e.step();  // both prefills fit the 64-token budget
  EXPECT_EQ(s.scheduled_seqs, 2);
  ASSERT_TRUE(e.add({3, 100, 5}));
  s = e.step();  // 2 decodes + 62 tokens of request 3's prefill
  EXPECT_EQ(s.scheduled_seqs, 3);
  EXPECT_EQ(s.scheduled_tokens, 64);
  EXPECT_EQ(s.emitted.size(), 2u);
}

TEST(BatchEngineTest, MaxNumSeqsLimitsRunningSet) {
  BatchEngine e(roofline_4090(), config(10000, 2));
  for (std::uint64_t id = 1; id <= 4; ++id) ASSERT_TRUE(e.add({id, 10, 4}));
  e.step();
  EXPECT_EQ(e.running(), 2);
  EXPECT_EQ(e.waiting(), 2);
}

TEST(BatchEngineTest, PreemptsNewestWhenKvRunsOutAndRecomputes) {
  // 8 blocks = 128 tokens. Two requests of 60-token prompts growing to 100 tokens each cannot
  // both stay resident.
  BatchEngine e(roofline_4090(), config(8));
  ASSERT_TRUE(e.add({1, 60, 40}));
  ASSERT_TRUE(e.add({2, 60, 40}));
  std::map<std::uint64_t, int> tokens;
  std::vector<std::uint64_t> preempted;
  int steps = 0;
  while (!e.idle() && steps < 1000) {
    const StepOutcome s = e.step();
    for (auto id : s.emitted) ++tokens[id];
    preempted.insert(preempted.end(), s.preempted.begin(), s.preempted.end());
    EXPECT_GE(e.free_blocks(), 0);
    ++steps;
  }
  EXPECT_TRUE(e.idle());
  EXPECT_EQ(tokens[1], 40);
  EXPECT_EQ(tokens[2], 40);
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted.front(), 2u);  // the newest goes first
  EXPECT_EQ(e.preemptions_total(), static_cast<std::int64_t>(preempted.size()));
  EXPECT_EQ(e.free_blocks(), 8);
}

TEST(BatchEngineTest, QueuesWhenPoolIsFullWithoutPreemptingForAdmission) {
  BatchEngine e(roofline_4090(), config(10));  // 160 tokens
  ASSERT_TRUE(e.add({1, 150, 5}));
  ASSERT_TRUE(e.add({2, 150, 5}));
  e.step();
  EXPECT_EQ(e.running(), 1);
  EXPECT_EQ(e.waiting(), 1);
  EXPECT_GT(e.kv_usage(), 0.9);
  while (e.running() == 1 && e.waiting() == 1) e.step();
  EXPECT_EQ(e.preemptions_total(), 0);
}

TEST(BatchEngineTest, RejectsRequestsThatCanNeverFit) {
  BatchEngine e(roofline_4090(), config(4));  // 64 tokens
  EXPECT_FALSE(e.add({1, 60, 10}));
  EXPECT_TRUE(e.add({2, 60, 5}));  // peak 64 cached tokens
  EXPECT_FALSE(e.add({2, 1, 1}));  // duplicate id
  EXPECT_FALSE(e.add({3, 0, 1}));
}

TEST(BatchEngineTest, CancelFreesBlocks) {
  BatchEngine e(roofline_4090(), config(100));
  ASSERT_TRUE(e.add({1, 100, 50}));
  e.step();
  EXPECT_LT(e.free_blocks(), 100);
  e.cancel(1);
  EXPECT_EQ(e.free_blocks(), 100);
  EXPECT_TRUE(e.idle());
  e.cancel(42);  // unknown: ignored
}

TEST(BatchEngineTest, PredictSingleMatchesHandCalculation) {
  const Roofline r = roofline_4090();
  const auto p = BatchEngine::predict_single(r, config(10000), 512, 65);
  const SeqWork prefill{512, 0};
  EXPECT_NEAR(p.ttft_s, r.step(std::span<const SeqWork>(&prefill, 1)).total_s, 1e-12);
  // Decode steps at contexts 512..575: close to the batch-1 decode time.
  EXPECT_NEAR(p.tpot_s, r.decode(1, 544).total_s, 1e-5);
  EXPECT_NEAR(p.e2e_s, p.ttft_s + 64 * p.tpot_s, 1e-9);
}

TEST(BatchEngineTest, DeterministicSequenceOfSteps) {
  auto run = [] {
    BatchEngine e(roofline_4090(), config(64, 8, 256));
    for (std::uint64_t id = 1; id <= 12; ++id)
      e.add({id, 30 + static_cast<std::int64_t>(id) * 7, 20});
    std::vector<double> durations;
    while (!e.idle()) durations.push_back(e.step().cost.total_s);
    return durations;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace llmcap::sim

namespace llmcap::sim {
namespace {

// Closed-loop throughput in virtual time: N requests in flight, each replaced on completion.
double closed_loop_tokens_per_s(const Roofline& r, std::int64_t concurrency, std::int64_t in,
                                std::int64_t out, std::int64_t blocks) {
  EngineConfig cfg;
  cfg.kv_pool_blocks = blocks;
  BatchEngine e(r, cfg);
  std::uint64_t next = 1;
  for (std::int64_t i = 0; i < concurrency; ++i) e.add({next++, in, out});
  double t = 0;
  std::int64_t tokens = 0;
  while (tokens < 20 * out * concurrency) {
    const StepOutcome s = e.step();
    t += s.cost.total_s;
    tokens += static_cast<std::int64_t>(s.emitted.size());
    for (std::size_t k = 0; k < s.finished.size(); ++k) e.add({next++, in, out});
  }
  return static_cast<double>(tokens) / t;
}

TEST(BatchEngineTest, ThroughputGrowsWithConcurrencyLikePublishedFigures) {
  // docs/metrics.md §11: RTX 4090, vLLM, Mistral-7B BF16, 256 in / 128 out: 210 / 377 / 644 / 975 /
  // 1190 output tok/s at concurrency 4 / 8 / 16 / 32 / 48. Checked for shape, not fitted.
  const ProfileCatalog c = ProfileCatalog::builtin();
  const Roofline r(*c.model("mistral-7b"), *c.hardware("rtx4090-24g"), analysis::Dtype::kBf16);
  double previous = 0;
  for (std::int64_t n : {1, 4, 8, 16, 32, 48}) {
    const double tps = closed_loop_tokens_per_s(r, n, 256, 128, 100000);
    std::printf("mistral-7b on rtx4090 at concurrency %lld: %.0f output tok/s\n",
                static_cast<long long>(n), tps);
    EXPECT_GT(tps, previous);
    previous = tps;
    if (n == 4) {
      EXPECT_NEAR(tps, 210, 210 * 0.35);
    }
    if (n == 32) {
      EXPECT_NEAR(tps, 975, 975 * 0.35);
    }
  }
}

}  // namespace
}  // namespace llmcap::sim
