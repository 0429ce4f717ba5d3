#include "sim/kv_block_pool.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "sim/batch_engine.h"
#include "sim/profile_catalog.h"

namespace llmcap::sim {
namespace {

std::vector<std::int64_t> tokens(std::int64_t n, std::int64_t first = 0) {
  std::vector<std::int64_t> t(static_cast<std::size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(PrefixBlockHashesTest, OneHashPerFullBlockChainedOnThePrefix) {
  const auto a = prefix_block_hashes(tokens(40), 16);
  ASSERT_EQ(a.size(), 2u);  // the partial third block is not hashed
  EXPECT_NE(a[0], a[1]);
  // Same first block, different second: first hash equal, second differs.
  auto other = tokens(40);
  other[20] = 999;
  const auto b = prefix_block_hashes(other, 16);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_NE(a[1], b[1]);
  // Same second block after a different first: the chain makes the second hash differ too.
  auto shifted = tokens(40);
  shifted[0] = 999;
  const auto c = prefix_block_hashes(shifted, 16);
  EXPECT_NE(a[0], c[0]);
  EXPECT_NE(a[1], c[1]);
  EXPECT_TRUE(prefix_block_hashes(tokens(15), 16).empty());
}

// The simulator continues a prompt's chain over the answer it will generate (output blocks are
// cached, for conversations): hashing prompt + answer at once or in two parts agrees.
TEST(PrefixBlockHashesTest, AppendContinuesTheChainFromTheLastFullBlock) {
  std::vector<std::int64_t> all(53);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i * 7 + 1);
  const auto whole = prefix_block_hashes(all, 16);
  ASSERT_EQ(whole.size(), 3u);
  // A 21-token prompt: one full block, 5 ids left over, then a 32-token answer.
  std::vector<std::int64_t> prompt(all.begin(), all.begin() + 21);
  auto hashes = prefix_block_hashes(prompt, 16);
  ASSERT_EQ(hashes.size(), 1u);
  std::vector<std::int64_t> rest(all.begin() + 16, all.end());
  append_block_hashes(hashes, rest, 16);
  EXPECT_EQ(hashes, whole);
  std::vector<std::uint64_t> none;
  append_block_hashes(none, all, 16);
  EXPECT_EQ(none, whole);
}

TEST(KvBlockPoolTest, PublishedBlocksStayCachedAfterReleaseUntilEvicted) {
  KvBlockPool pool(10);
  const auto h = prefix_block_hashes(tokens(64), 16);  // 4 blocks
  ASSERT_TRUE(pool.allocate(5));                       // 4 full + 1 partial
  for (std::uint64_t x : h) EXPECT_TRUE(pool.publish(x));
  EXPECT_EQ(pool.available(), 5);
  EXPECT_EQ(pool.match(h, 10), 0 + 4);
  pool.release(h, 1);
  EXPECT_EQ(pool.available(), 10);  // evictable blocks count as available
  EXPECT_EQ(pool.cached(), 4);
  EXPECT_EQ(pool.match(h, 10), 4);
  EXPECT_EQ(pool.match(h, 2), 2);
  EXPECT_EQ(pool.evictable_among(h, 4), 4);

  // Taking 7 blocks uses the 6 free ones and evicts one cached block: the tail (block 3),
  // released first, goes first.
  ASSERT_TRUE(pool.allocate(7));
  EXPECT_EQ(pool.evictions_total(), 1);
  EXPECT_EQ(pool.match(h, 10), 3);
  EXPECT_FALSE(pool.allocate(4));  // only 3 evictable remain
  EXPECT_EQ(pool.available(), 3);
}

TEST(KvBlockPoolTest, HeldBlocksAreNotEvictableAndLeastRecentlyReleasedGoFirst) {
  KvBlockPool pool(4);
  const auto a = prefix_block_hashes(tokens(32, 0), 16);
  const auto b = prefix_block_hashes(tokens(32, 1000), 16);
  ASSERT_TRUE(pool.allocate(2));
  for (std::uint64_t x : a) pool.publish(x);
  ASSERT_TRUE(pool.allocate(2));
  for (std::uint64_t x : b) pool.publish(x);
  pool.release(a, 0);  // a released first: least recently used
  pool.release(b, 0);
  pool.acquire(b, 2);  // b in use again: not evictable
  EXPECT_EQ(pool.evictable_among(a, 2), 2);
  EXPECT_EQ(pool.available(), 2);
  ASSERT_TRUE(pool.allocate(1));
  EXPECT_EQ(pool.match(a, 2), 1);  // a's tail went
  EXPECT_EQ(pool.match(b, 2), 2);
  EXPECT_FALSE(pool.allocate(2));
  // A duplicate publish keeps the block private.
  EXPECT_FALSE(pool.publish(b[0]));
}

Roofline kv_roofline_4090() {
  const ProfileCatalog c = ProfileCatalog::builtin();
  return Roofline(*c.model("llama-3.1-8b"), *c.hardware("rtx4090-48g"), analysis::Dtype::kBf16);
}

EngineConfig kv_config(std::int64_t blocks, bool caching = true) {
  EngineConfig c;
  c.kv_pool_blocks = blocks;
  c.enable_prefix_caching = caching;
  return c;
}

// Prompt of `n` tokens: `shared` tokens common to every prompt, then tokens unique to `salt`.
EngineRequest kv_request(std::uint64_t id, std::int64_t n, std::int64_t shared, std::int64_t salt,
                         std::int64_t out = 2) {
  std::vector<std::int64_t> t = tokens(n, 0);
  for (std::int64_t i = shared; i < n; ++i) t[static_cast<std::size_t>(i)] = salt * 100000 + i;
  return EngineRequest{id, n, out, prefix_block_hashes(t, 16)};
}

std::int64_t run_to_idle(BatchEngine& e, std::int64_t* first_step_tokens = nullptr) {
  std::int64_t steps = 0;
  while (!e.idle()) {
    const StepOutcome o = e.step();
    if (steps++ == 0 && first_step_tokens) *first_step_tokens = o.scheduled_tokens;
  }
  return steps;
}

TEST(BatchEnginePrefixCacheTest, SecondRequestPrefillsOnlyTheUncachedSuffix) {
  BatchEngine e(kv_roofline_4090(), kv_config(1000));
  ASSERT_TRUE(e.add(kv_request(1, 200, 128, 1)));
  std::int64_t first = 0;
  run_to_idle(e, &first);
  EXPECT_EQ(first, 200);
  EXPECT_EQ(e.prefix_cache_queries_total(), 200);
  EXPECT_EQ(e.prefix_cache_hits_total(), 0);
  EXPECT_EQ(e.free_blocks(), 1000);  // cached blocks count as free
  EXPECT_EQ(e.kv_usage(), 0.0);

  ASSERT_TRUE(e.add(kv_request(2, 200, 128, 2)));
  const StepOutcome o = e.step();
  EXPECT_EQ(o.scheduled_tokens, 200 - 128);  // 8 shared blocks hit
  EXPECT_EQ(e.prefix_cache_hits_total(), 128);
  EXPECT_EQ(e.prefix_cache_queries_total(), 400);
  // The hit prefix is charged as computed context, so the step is cheaper than a full prefill.
  BatchEngine cold(kv_roofline_4090(), kv_config(1000, false));
  ASSERT_TRUE(cold.add(kv_request(2, 200, 128, 2)));
  EXPECT_LT(o.cost.total_s, cold.step().cost.total_s);
}

TEST(BatchEnginePrefixCacheTest, IdenticalPromptRecomputesItsLastToken) {
  BatchEngine e(kv_roofline_4090(), kv_config(1000));
  ASSERT_TRUE(e.add(kv_request(1, 64, 64, 1)));
  run_to_idle(e);
  ASSERT_TRUE(e.add(kv_request(2, 64, 64, 2)));
  // 4 full blocks cached but at most (64 − 1) / 16 = 3 are used: 16 tokens are prefilled.
  EXPECT_EQ(e.step().scheduled_tokens, 16);
  EXPECT_EQ(e.prefix_cache_hits_total(), 48);
}

TEST(BatchEnginePrefixCacheTest, ConcurrentSharersHoldTheSameBlocks) {
  BatchEngine e(kv_roofline_4090(), kv_config(1000));
  ASSERT_TRUE(e.add(kv_request(1, 160, 160, 1, 50)));
  e.step();  // request 1 prefilled, its 10 blocks published
  ASSERT_TRUE(e.add(kv_request(2, 160, 160, 2, 50)));
  e.step();  // request 2 shares 9 blocks, allocates 1 of its own
  // Request 1 holds 11 blocks (161 tokens after its first token); request 2 shares 9 of them
  // ((160 − 1) / 16) and owns 1.
  EXPECT_EQ(e.free_blocks(), 1000 - 11 - 1);
  run_to_idle(e);
  EXPECT_EQ(e.free_blocks(), 1000);
}

TEST(BatchEnginePrefixCacheTest, DisabledCachingNeverHits) {
  BatchEngine e(kv_roofline_4090(), kv_config(1000, false));
  ASSERT_TRUE(e.add(kv_request(1, 200, 128, 1)));
  run_to_idle(e);
  ASSERT_TRUE(e.add(kv_request(2, 200, 128, 2)));
  EXPECT_EQ(e.step().scheduled_tokens, 200);
  EXPECT_EQ(e.prefix_cache_hits_total(), 0);
  EXPECT_EQ(e.prefix_cache_queries_total(), 0);
}

TEST(BatchEnginePrefixCacheTest, CachedBlocksAreEvictedUnderMemoryPressure) {
  BatchEngine e(kv_roofline_4090(), kv_config(20));
  ASSERT_TRUE(e.add(kv_request(1, 160, 160, 1, 1)));  // 10 blocks, all published
  run_to_idle(e);
  EXPECT_EQ(e.pool().cached(), 10);
  // A different 300-token prompt needs 19 blocks: 10 free + 9 evicted.
  ASSERT_TRUE(e.add(kv_request(2, 300, 0, 7, 1)));
  run_to_idle(e);
  EXPECT_EQ(e.pool().evictions_total(), 9);
  // Request 1's prompt again: its tail blocks went first, only its first block survived.
  ASSERT_TRUE(e.add(kv_request(3, 160, 160, 3, 1)));
  EXPECT_EQ(e.step().scheduled_tokens, 160 - 16);
  EXPECT_EQ(e.prefix_cache_hits_total(), 16);
}

TEST(BatchEnginePrefixCacheTest, CancelReleasesSharedBlocksToTheCache) {
  BatchEngine e(kv_roofline_4090(), kv_config(100));
  ASSERT_TRUE(e.add(kv_request(1, 64, 64, 1, 10)));
  e.step();
  e.cancel(1);
  EXPECT_EQ(e.free_blocks(), 100);
  EXPECT_EQ(e.pool().cached(), 4);
  ASSERT_TRUE(e.add(kv_request(2, 80, 64, 2, 1)));
  EXPECT_EQ(e.step().scheduled_tokens, 16);
}

TEST(BatchEnginePrefixCacheTest, AReadmittedRequestQueriesItsPromptAndGeneratedTokens) {
  // 8 blocks = 128 tokens: two 60-token prompts growing to 100 tokens cannot both stay
  // resident. A preempted request is readmitted with prompt + generated tokens to prefill, and
  // vLLM counts all of them as queried (request.num_tokens), so hits never exceed queries even
  // when its blocks, hashed over its output too (as conversations' are), are found again.
  BatchEngine e(kv_roofline_4090(), kv_config(8));
  ASSERT_TRUE(e.add(EngineRequest{1, 60, 40, prefix_block_hashes(tokens(100, 0), 16)}));
  ASSERT_TRUE(e.add(EngineRequest{2, 60, 40, prefix_block_hashes(tokens(100, 5000), 16)}));
  std::map<std::uint64_t, std::int64_t> generated;
  std::int64_t expected_queries = 120;
  int preemptions = 0;
  while (!e.idle()) {
    const StepOutcome o = e.step();
    // A request preempted in this step emitted nothing in it; readmitted, it queries its prompt
    // again and the tokens it had generated.
    for (auto id : o.preempted) {
      expected_queries += 60 + generated[id];
      ++preemptions;
    }
    for (auto id : o.emitted) ++generated[id];
    EXPECT_LE(e.prefix_cache_hits_total(), e.prefix_cache_queries_total());
  }
  ASSERT_GT(preemptions, 0);
  EXPECT_EQ(e.prefix_cache_queries_total(), expected_queries);
  EXPECT_GT(e.prefix_cache_hits_total(), 0);  // the readmitted request found its first block
}

}  // namespace
}  // namespace llmcap::sim
