// JobState: the life cycle of a job, and which transitions between states are allowed.
//
//   queued ──> running ──> succeeded | failed | cancelled
//     │           └──────> interrupted  (daemon stopped mid-job; marked at the next start-up)
//     └──> cancelled | failed            interrupted ──> queued (resume) | running | cancelled |
//     failed
//
// succeeded, failed and cancelled are terminal. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string_view>

namespace llmcap::storage {

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled, kInterrupted };

std::string_view to_string(JobState state);  // "queued", "running", ...
std::optional<JobState> parse_job_state(std::string_view text);

// succeeded, failed, cancelled: nothing will ever run the job again.
bool is_terminal(JobState state);
// Nothing is running the job (terminal or interrupted): its data may be deleted.
bool is_at_rest(JobState state);
bool transition_allowed(JobState from, JobState to);

}  // namespace llmcap::storage
