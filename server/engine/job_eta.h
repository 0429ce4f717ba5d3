// How long a job has left, for the console's live line and the daemon's progress (eta_s).
// Pure; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>

namespace llmcap::server {

// Seconds left in a job: what is left of the running step (planned - elapsed, at least 0),
// plus the steps after it at the mean duration of the finished ones (or, before any finished,
// the running step's planned length). Steps of a capacity search are estimates. All in wall-clock
// seconds (a simulated target's planned step length divided by its time_scale).
inline double eta_seconds(double job_elapsed_s, std::int64_t steps_done, std::int64_t steps_planned,
                          double step_elapsed_s, double step_planned_s) {
  const double this_step = std::max(0.0, step_planned_s - step_elapsed_s);
  const auto after = std::max<std::int64_t>(0, steps_planned - steps_done - 1);
  const double per_step = steps_done > 0
                              ? (job_elapsed_s - step_elapsed_s) / static_cast<double>(steps_done)
                              : step_planned_s;
  return this_step + static_cast<double>(after) * std::max(0.0, per_step);
}

}  // namespace llmcap::server
