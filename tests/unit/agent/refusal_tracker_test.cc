#include "agent/refusal_tracker.h"

#include <gtest/gtest.h>

namespace llmcap::agent {
namespace {

constexpr std::int64_t kMs = 1'000'000;

TEST(RefusalTracker, BacksOffDoublingToOneSecondAndResetsOnAnAnswer) {
  RefusalTracker t;
  EXPECT_EQ(t.backoff_ns(), 0);
  t.on_refused(0);
  EXPECT_EQ(t.backoff_ns(), 10 * kMs);
  t.on_refused(1);
  EXPECT_EQ(t.backoff_ns(), 20 * kMs);
  for (int i = 0; i < 30; ++i) t.on_refused(2);
  EXPECT_EQ(t.backoff_ns(), RefusalTracker::kMaxBackoffNs);
  t.on_answer();
  EXPECT_EQ(t.backoff_ns(), 0);
}

TEST(RefusalTracker, UnreachableOnlyAfterEnoughRefusalsOverTwoSecondsAndNoAnswer) {
  RefusalTracker t;
  for (std::uint64_t i = 0; i < RefusalTracker::kMinRefusals; ++i) t.on_refused(0);
  EXPECT_FALSE(t.unreachable(1'999 * kMs));  // not yet 2 s
  EXPECT_TRUE(t.unreachable(2'000 * kMs));
  EXPECT_EQ(t.span_ms(2'000 * kMs), 2'000);

  RefusalTracker few;
  few.on_refused(0);
  EXPECT_FALSE(few.unreachable(10'000 * kMs));  // one refusal is not a down target

  RefusalTracker answered;
  answered.on_answer();  // it answered once in this step: later refusals are its errors
  for (int i = 0; i < 100; ++i) answered.on_refused(0);
  EXPECT_FALSE(answered.unreachable(10'000 * kMs));
}

}  // namespace
}  // namespace llmcap::agent
