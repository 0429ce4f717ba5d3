#include "storage/job_state.h"

namespace llmcap::storage {

std::string_view to_string(JobState state) {
  switch (state) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
    case JobState::kInterrupted: return "interrupted";
  }
  return "unknown";
}

std::optional<JobState> parse_job_state(std::string_view text) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled, JobState::kInterrupted}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

bool is_terminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

bool is_at_rest(JobState state) { return is_terminal(state) || state == JobState::kInterrupted; }

bool transition_allowed(JobState from, JobState to) {
  switch (from) {
    case JobState::kQueued:
      return to == JobState::kRunning || to == JobState::kCancelled || to == JobState::kFailed;
    case JobState::kRunning:
      return to == JobState::kSucceeded || to == JobState::kFailed || to == JobState::kCancelled ||
             to == JobState::kInterrupted;
    case JobState::kInterrupted:
      return to == JobState::kQueued || to == JobState::kRunning || to == JobState::kCancelled ||
             to == JobState::kFailed;
    case JobState::kSucceeded:
    case JobState::kFailed:
    case JobState::kCancelled: return false;
  }
  return false;
}

}  // namespace llmcap::storage
