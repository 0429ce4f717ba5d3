#include "storage/job_state.h"

#include <gtest/gtest.h>

namespace llmcap::storage {
namespace {

constexpr JobState kAll[] = {JobState::kQueued, JobState::kRunning,   JobState::kSucceeded,
                             JobState::kFailed, JobState::kCancelled, JobState::kInterrupted};

TEST(JobStateTest, NamesRoundTrip) {
  for (JobState s : kAll) EXPECT_EQ(parse_job_state(to_string(s)), s);
  EXPECT_EQ(parse_job_state("done"), std::nullopt);
  EXPECT_EQ(to_string(JobState::kInterrupted), "interrupted");
}

TEST(JobStateTest, TerminalStatesGoNowhere) {
  for (JobState from : {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    EXPECT_TRUE(is_terminal(from));
    for (JobState to : kAll) EXPECT_FALSE(transition_allowed(from, to));
  }
}

TEST(JobStateTest, AllowedTransitions) {
  EXPECT_TRUE(transition_allowed(JobState::kQueued, JobState::kRunning));
  EXPECT_TRUE(transition_allowed(JobState::kQueued, JobState::kCancelled));
  EXPECT_FALSE(transition_allowed(JobState::kQueued, JobState::kSucceeded));
  EXPECT_FALSE(transition_allowed(JobState::kQueued, JobState::kInterrupted));
  EXPECT_TRUE(transition_allowed(JobState::kRunning, JobState::kSucceeded));
  EXPECT_TRUE(transition_allowed(JobState::kRunning, JobState::kInterrupted));
  EXPECT_FALSE(transition_allowed(JobState::kRunning, JobState::kQueued));
  EXPECT_FALSE(transition_allowed(JobState::kRunning, JobState::kRunning));
  EXPECT_TRUE(transition_allowed(JobState::kInterrupted, JobState::kQueued));
  EXPECT_TRUE(transition_allowed(JobState::kInterrupted, JobState::kRunning));
  EXPECT_FALSE(transition_allowed(JobState::kInterrupted, JobState::kSucceeded));
}

TEST(JobStateTest, AtRest) {
  EXPECT_TRUE(is_at_rest(JobState::kInterrupted));
  EXPECT_TRUE(is_at_rest(JobState::kFailed));
  EXPECT_FALSE(is_at_rest(JobState::kQueued));
  EXPECT_FALSE(is_at_rest(JobState::kRunning));
  EXPECT_FALSE(is_terminal(JobState::kInterrupted));
}

}  // namespace
}  // namespace llmcap::storage
